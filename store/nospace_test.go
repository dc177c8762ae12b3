package store_test

import (
	"context"
	"fmt"
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
