package service_test

import (
	"context"
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

	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// freePort returns a loopback port nothing listens on (for now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// smallOptions are a service's options on conn with limits a test server
// can reserve.
func smallOptions(conn *nats.Conn, r *service.Readiness, setup time.Duration) service.Options {
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	cfg.StorageLimit = 24 << 20
	cfg.AckWait = 2 * time.Second // redeliveries within a test
	return service.Options{
		Conn: conn, Config: cfg, Readiness: r, SetupTimeout: setup,
		Worker: worker.Options{Name: "startup", Fetch: servicetest.LoopbackFetch(), DrainTimeout: 2 * time.Second},
	}
}

type opened struct {
	svc *service.Service
	err error
	at  time.Time
}

func openAsync(ctx context.Context, o service.Options) <-chan opened {
	done := make(chan opened, 1)
	go func() {
		svc, err := service.Open(ctx, o)
		done <- opened{svc, err, time.Now()}
	}()
	return done
}

// A service started before any server exists waits, not ready, saying
// what for; once a server comes up it provisions and becomes ready.
func TestOpenWaitsForAServer(t *testing.T) {
	port := freePort(t)
	nc, err := service.Connect(service.ConnectOptions{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), Name: "startup", WaitForServer: true})
	if err != nil {
		t.Fatalf("Connect(no server yet, WaitForServer) = %v, want a connection that keeps trying", err)
	}
	defer nc.Close()
	r := &service.Readiness{}
	done := openAsync(t.Context(), smallOptions(nc, r, 2*time.Minute))
	natstest.Eventually(t, 30*time.Second, "not ready, waiting for a NATS server", func() bool {
		return strings.Contains(r.NotReady(), "waiting for a NATS server")
	})
	select {
	case o := <-done:
		t.Fatalf("Open returned before any server existed: %v", o.err)
	default:
	}

	// The server comes up on the port the service dials.
	natstest.StartJetStreamWith(t, func(o *server.Options) { o.Port = port })
	var o opened
	select {
	case o = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("Open did not return within 90s of the server's start (readiness: %q)", r.NotReady())
	}
	if o.err != nil {
		t.Fatalf("Open = %v once the server is up", o.err)
	}
	defer o.svc.Close()
	if got := r.NotReady(); got == "" {
		t.Errorf("ready before the workers consume")
	}
	running, err := o.svc.Start(t.Context(), 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Stop()
	if got := r.NotReady(); got != "" {
		t.Errorf("NotReady() = %q once the workers consume, want \"\"", got)
	}
}

// A start-up that never finds a server ends at the start-up timeout,
// saying what it waited for.
func TestOpenStartupTimeout(t *testing.T) {
	nc, err := service.Connect(service.ConnectOptions{URL: fmt.Sprintf("nats://127.0.0.1:%d", freePort(t)), WaitForServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, err = service.Open(t.Context(), smallOptions(nc, nil, time.Second))
	if !errors.Is(err, service.ErrStartupTimeout) || !strings.Contains(err.Error(), "still waiting for a NATS server") {
		t.Fatalf("Open = %v, want ErrStartupTimeout waiting for a NATS server", err)
	}
}

// Permanent errors end start-up at once, long before its timeout: a stream
// that holds the lifecycle subjects already, and credentials without the
// permission to create streams.
func TestOpenPermanentErrorsExitPromptly(t *testing.T) {
	// promptly is under one attempt's timeout (10s): a refusal is not
	// waited out (the permission poll cancels the attempt at once; it takes
	// some 50ms).
	const setup, promptly = 5 * time.Minute, 5 * time.Second
	t.Run("conflicting stream", func(t *testing.T) {
		_, nc, js := natstest.StartJetStream(t)
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"a2a.task.>"}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		o := <-openAsync(t.Context(), smallOptions(nc, nil, setup))
		if o.err == nil {
			o.svc.Close()
			t.Fatal("Open succeeded beside a stream holding its subjects")
		}
		if errors.Is(o.err, service.ErrStartupTimeout) || o.at.Sub(start) > promptly {
			t.Fatalf("Open = %v after %v, want the server's refusal at once", o.err, o.at.Sub(start))
		}
		var apiErr *jetstream.APIError
		if !errors.As(o.err, &apiErr) || !strings.Contains(o.err.Error(), "A2A_TASKS") {
			t.Errorf("Open = %v, want the server's error naming the stream", o.err)
		}
	})
	t.Run("permission refused", func(t *testing.T) {
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		// The user may use JetStream but not create streams.
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(`
jetstream { store_dir: %q }
accounts { A: { jetstream: enabled, users: [ { user: a, password: a,
  permissions: { publish: { allow: [">"], deny: ["$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>"] } } } ] } }
`, filepath.Join(dir, "js"))), 0o600); err != nil {
			t.Fatal(err)
		}
		_, nc, _ := natstest.StartConf(t, conf, nats.UserInfo("a", "a"))
		start := time.Now()
		o := <-openAsync(t.Context(), smallOptions(nc, nil, setup))
		if o.err == nil {
			o.svc.Close()
			t.Fatal("Open succeeded without the permission to create streams")
		}
		if !errors.Is(o.err, service.ErrPermission) || o.at.Sub(start) > promptly {
			t.Fatalf("Open = %v after %v, want ErrPermission at once", o.err, o.at.Sub(start))
		}
		t.Logf("Open = %v after %v", o.err, o.at.Sub(start).Round(time.Millisecond))
	})
}
