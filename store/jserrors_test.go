package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// provisionErr provisions a small config on js within d and returns the
// error (which the test wants).
func provisionErr(t *testing.T, js jetstream.JetStream, cfg store.Config, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	if cfg.StorageLimit == 0 {
		cfg.StorageLimit = 24 << 20
	}
	err := store.Provision(ctx, js, cfg)
	if err == nil {
		t.Fatal("Provision succeeded; the test wants it to fail")
	}
	return err
}

// Errors of a deployment still forming, each from a real server: waiting
// cures them.
func TestWaitingOnADeploymentStillForming(t *testing.T) {
	t.Run("no JetStream", func(t *testing.T) {
		_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStream = false })
		err := provisionErr(t, js, store.Config{}, 10*time.Second)
		if got := store.Waiting(err); !strings.Contains(got, "JetStream") {
			t.Errorf("Waiting(%v) = %q, want it to wait for JetStream", err, got)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		// Something takes JetStream's requests and never answers them (a
		// server whose JetStream is not up yet looks so to its clients).
		_, nc, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStream = false })
		sub, err := nc.SubscribeSync("$JS.API.>")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		err = provisionErr(t, js, store.Config{}, 300*time.Millisecond)
		if got := store.Waiting(err); !strings.Contains(got, "timed out") {
			t.Errorf("Waiting(%v) = %q, want it to wait for an answer", err, got)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = nats.Connect("nats://"+addr, nats.Timeout(2*time.Second))
		if err == nil {
			t.Fatal("connected to a closed port")
		}
		if got := store.Waiting(err); !strings.Contains(got, "NATS server") {
			t.Errorf("Waiting(%v) = %q, want it to wait for a server", err, got)
		}
	})
	// The errors of a cluster still electing or placing, as the server
	// builds them and as they travel (its ApiError in JSON, read by
	// nats.go): an in-process cluster does not reliably produce them on
	// cue; TestCluster meets them for real.
	for _, tc := range []struct {
		err  *server.ApiError
		want string
	}{
		{server.NewJSClusterNoPeersError(errors.New("peer offline")), "peers"},
		{server.NewJSClusterNotAvailError(), "meta leader"},
		{server.NewJSClusterNotLeaderError(), "meta leader"},
		{server.NewJSStreamOfflineError(), "offline"},
		{server.NewJSNotEnabledError(), "JetStream"},
	} {
		b, err := json.Marshal(tc.err)
		if err != nil {
			t.Fatal(err)
		}
		var apiErr jetstream.APIError
		if err := json.Unmarshal(b, &apiErr); err != nil {
			t.Fatal(err)
		}
		err = fmt.Errorf("store: provision stream A2A_TASKS: %w", &apiErr)
		if got := store.Waiting(err); !strings.Contains(got, tc.want) {
			t.Errorf("Waiting(%v) = %q, want it to mention %q", err, got, tc.want)
		}
	}
}

// Errors waiting does not cure, each from a real server.
func TestWaitingNotOnPermanentErrors(t *testing.T) {
	_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 64 << 20 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Another stream holds the lifecycle subjects already.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"a2a.task.>"}}); err != nil {
		t.Fatal(err)
	}
	overlap := provisionErr(t, js, store.Config{}, 10*time.Second)
	if err := js.DeleteStream(ctx, "SQUATTER"); err != nil {
		t.Fatal(err)
	}
	// Deleting an account's last stream, the server removes the account's
	// streams directory as it goes, racing a create right after it: "could
	// not create storage directory … no such file or directory" (its log),
	// 500 err_code 10049 to the client — about 1 in 60 runs under -race.
	var err error
	natstest.Eventually(t, 10*time.Second, "provisioned after the squatter left", func() bool {
		err = store.Provision(ctx, js, store.Config{StorageLimit: 24 << 20})
		return err == nil
	})
	for name, err := range map[string]error{
		"subjects overlap":         overlap,
		"storage cannot change":    provisionErr(t, js, store.Config{Storage: jetstream.MemoryStorage}, 10*time.Second),
		"replicas without cluster": provisionErr(t, js, store.Config{Replicas: 3, StorageLimit: 30 << 20}, 10*time.Second),
		"limits over the server's": provisionErr(t, js, store.Config{StorageLimit: 1 << 30}, 10*time.Second),
		"invalid config":           provisionErr(t, js, store.Config{PinsBucket: "no.dots"}, 10*time.Second),
		"cancelled":                cancelledErr(t, js),
		"nil":                      nil,
	} {
		if got := store.Waiting(err); got != "" {
			t.Errorf("%s: Waiting(%v) = %q, want \"\" (permanent)", name, err, got)
		}
	}
}

// cancelledErr is Provision's error under a context cancelled by its
// caller (a shutdown).
func cancelledErr(t *testing.T, js jetstream.JetStream) error {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := store.Provision(ctx, js, store.Config{StorageLimit: 24 << 20})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Provision(cancelled) = %v, want context.Canceled", err)
	}
	return err
}

// TestWaitingOnAStreamStillForming: two workers provisioning a cluster at
// once (TestCluster under load): one's create finds the stream "already in
// use" (the other's is placed), and its info then answers "stream not
// found" (its replicas are not up yet). Provision waits for it, as it waits
// for a cluster forming, instead of failing at start-up. The server here
// answers JetStream's requests exactly so.
func TestWaitingOnAStreamStillForming(t *testing.T) {
	_, nc, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStream = false })
	apiErr := func(e *server.ApiError) []byte {
		b, err := json.Marshal(struct {
			Type  string           `json:"type"`
			Error *server.ApiError `json:"error"`
		}{"io.nats.jetstream.api.v1.stream_info_response", e})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sub, err := nc.Subscribe("$JS.API.STREAM.>", func(m *nats.Msg) {
		switch {
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.INFO."):
			m.Respond(apiErr(server.NewJSStreamNotFoundError()))
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.CREATE."):
			m.Respond(apiErr(server.NewJSStreamNameExistError()))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	err = provisionErr(t, js, store.Config{}, 10*time.Second)
	if got := store.Waiting(err); !strings.Contains(got, "stream being created") {
		t.Errorf("Waiting(%v) = %q, want it to wait for the stream", err, got)
	}
}

// fillUntilRefused publishes 16 KiB messages to subject until a publish
// fails, and returns that error.
func fillUntilRefused(t *testing.T, js jetstream.JetStream, subject string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	body := []byte(strings.Repeat("x", 16<<10))
	for i := range 10_000 {
		if _, err := js.Publish(ctx, subject, body); err != nil {
			t.Logf("refused after %d messages: %v", i, err)
			return err
		}
	}
	t.Fatalf("160 MB published to %s and none refused", subject)
	return nil
}

// Writes refused for lack of space, each by a real server: NoSpace says
// why, for a publish and for a KV write alike.
func TestNoSpace(t *testing.T) {
	t.Run("server storage full", func(t *testing.T) {
		_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 2 << 20 })
		ctx := t.Context()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}}); err != nil {
			t.Fatal(err)
		}
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "pins", MaxBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		err = fillUntilRefused(t, js, "fill")
		if got := store.NoSpace(err); got != "server storage full" {
			t.Errorf("NoSpace(%v) = %q, want server storage full", err, got)
		}
		_, err = kv.Put(ctx, "task", []byte("pin"))
		if got := store.NoSpace(fmt.Errorf("store: update pin %q: %w", "task", err)); got != "server storage full" {
			t.Errorf("NoSpace(KV put: %v) = %q, want server storage full", err, got)
		}
	})
	t.Run("account storage limit", func(t *testing.T) {
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(`
jetstream { store_dir: %q }
accounts { A: { jetstream: { max_file: 1MB, max_mem: 1MB }, users: [ { user: a, password: a } ] } }
`, filepath.Join(dir, "js"))), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, js := natstest.StartConf(t, conf, nats.UserInfo("a", "a"))
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}}); err != nil {
			t.Fatal(err)
		}
		err := fillUntilRefused(t, js, "fill")
		if got := store.NoSpace(err); got != "account storage limit reached" {
			t.Errorf("NoSpace(%v) = %q, want account storage limit reached", err, got)
		}
	})
	t.Run("stream at its limit", func(t *testing.T) {
		_, _, js := natstest.StartJetStream(t)
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"},
			MaxBytes: 256 << 10, Discard: jetstream.DiscardNew}); err != nil {
			t.Fatal(err)
		}
		err := fillUntilRefused(t, js, "fill")
		if got := store.NoSpace(err); got != "stream at its limit" {
			t.Errorf("NoSpace(%v) = %q, want stream at its limit", err, got)
		}
	})
	t.Run("not for lack of space", func(t *testing.T) {
		_, _, js := natstest.StartJetStream(t)
		ctx := t.Context()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, MaxMsgSize: 1024,
			MaxBytes: 1 << 20, Discard: jetstream.DiscardNew}); err != nil {
			t.Fatal(err)
		}
		_, tooLarge := js.Publish(ctx, "s", make([]byte, 2048))
		_, wrongSeq := js.Publish(ctx, "s", []byte("x"), jetstream.WithExpectLastSequence(42))
		_, noStream := js.Publish(ctx, "nowhere", []byte("x"))
		for _, err := range []error{tooLarge, wrongSeq, noStream, nil} {
			if got := store.NoSpace(err); got != "" {
				t.Errorf("NoSpace(%v) = %q, want \"\"", err, got)
			}
		}
		if tooLarge == nil || wrongSeq == nil || noStream == nil {
			t.Errorf("the server took a write it should refuse: %v, %v, %v", tooLarge, wrongSeq, noStream)
		}
	})
}
