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
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
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

// fullTasks is how many tasks the full-store test drifts.
const fullTasks = 8

// A store that cannot write loses nothing: a server whose max_file_store
// another stream has used up refuses the verdicts and pins; the worker
// holds their events unacknowledged (not ready, saying why, the metric
// counting them), dead-letters nothing, and once space returns publishes
// every task's card.drift exactly once.
func TestStoreFullLosesNothing(t *testing.T) {
	srv, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 40 << 20 })
	ctx := t.Context()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	start := func(r *service.Readiness) (*service.Service, *service.Running) {
		t.Helper()
		svc, err := service.Open(ctx, smallOptions(connect(), r, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		running, err := svc.Start(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { running.Stop() })
		return svc, running
	}

	// Every task pinned on the card of T0.
	svc, running := start(nil)
	cfg := svc.Config()
	out := servicetest.Collect(t, js, cfg)
	emit, err := client.NewEmitter(js, "urn:test:store-full")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	task := func(i int) string { return fmt.Sprintf("full-%d", i) }
	for i := range fullTasks {
		if err := emit.Submitted(ctx, events.Submitted{TaskID: task(i), AgentURL: agent.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Posture: "fail-closed"}); err != nil {
			t.Fatal(err)
		}
	}
	out.WaitFor(t, "every task pinned", func(c *servicetest.Collector) bool { return len(c.All(events.TypePinned)) == fullTasks })
	if err := running.Stop(); err != nil {
		t.Fatal(err)
	}

	// The card drifts, every task calls the agent, then another tenant's
	// stream takes what is left of the server's storage.
	agent.Set(servicetest.WriteupT40)
	for i := range fullTasks {
		if err := emit.Request(ctx, events.Request{TaskID: task(i), AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TENANT", Subjects: []string{"tenant"}}); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 64<<10)
	for {
		_, err := js.Publish(ctx, "tenant", body)
		if err == nil {
			continue
		}
		if store.NoSpace(err) == "" {
			t.Fatalf("filling the store: %v", err)
		}
		break
	}

	// A worker starts on the full store: it holds the events, not ready.
	r := &service.Readiness{}
	svc, _ = start(r)
	natstest.Eventually(t, 60*time.Second, "not ready: store full", func() bool {
		return strings.HasPrefix(r.NotReady(), "store full: server storage full")
	})
	t.Logf("readiness while full: %q", r.NotReady())
	natstest.Eventually(t, 30*time.Second, "events held for space", func() bool { return gauge(t, svc.Metrics().HeldForSpace) > 0 })
	if n := len(out.All(events.TypeDrift)); n != 0 {
		t.Fatalf("%d card.drift published on a full store", n)
	}
	// Held through several AckWaits (2s): kept in progress, not redelivered
	// to be dead-lettered on its MaxDeliver-th delivery.
	deadline := time.Now().Add(3 * cfg.AckWait)
	natstest.Eventually(t, time.Minute, "three AckWaits on a full store", func() bool { return time.Now().After(deadline) })
	if got := dlqMessages(t, js, cfg); got != 0 {
		t.Fatalf("%d dead letters on a full store, want none", got)
	}
	for _, name := range cfg.ConsumerNames() {
		c, err := js.Consumer(ctx, cfg.LifecycleStream, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered != 0 {
			t.Errorf("consumer %s: %d events redelivered while held, want 0 (kept in progress)", name, info.NumRedelivered)
		}
	}

	// Space returns: every verdict, once.
	tenant, err := js.Stream(ctx, "TENANT")
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "every task's card.drift", func(c *servicetest.Collector) bool { return len(c.All(events.TypeDrift)) >= fullTasks })
	servicetest.Flushed(t, emit, time.Minute)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := svc.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	out.CaughtUp(t)
	drifts := out.CountBy(events.TypeDrift)
	for i := range fullTasks {
		if drifts[task(i)] != 1 {
			t.Errorf("task %s: %d card.drift, want exactly 1 (all: %v)", task(i), drifts[task(i)], drifts)
		}
	}
	if got := dlqMessages(t, js, cfg); got != 0 {
		t.Errorf("%d dead letters, want none", got)
	}
	natstest.Eventually(t, 30*time.Second, "ready again", func() bool { return r.NotReady() == "" })
	if g := gauge(t, svc.Metrics().HeldForSpace); g != 0 {
		t.Errorf("carddrift_events_held_for_space = %v once space returned, want 0", g)
	}
	var refused dto.Metric
	if err := svc.Metrics().Refused.WithLabelValues("server storage full").Write(&refused); err != nil || refused.GetCounter().GetValue() == 0 {
		t.Errorf("carddrift_writes_refused_total{reason=server storage full} = %v, want > 0", refused.GetCounter().GetValue())
	}
}

func gauge(t *testing.T, g interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func dlqMessages(t *testing.T, js jetstream.JetStream, cfg store.Config) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
