package service_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/budget"
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

// A service on its own embedded server: two workers consume, a submission
// is pinned, the backlog drains, Stop drains and returns nil, Close twice.
func TestServiceEmbedded(t *testing.T) {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	svc, err := service.Open(ctx, service.Options{
		DataDir: t.TempDir(), Config: cfg, Workers: 2,
		Worker: worker.Options{Name: "svc", Fetch: servicetest.LoopbackFetch(), DrainTimeout: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !svc.Embedded() || svc.URL() == "" {
		t.Fatalf("Embedded() = %v, URL() = %q; want an embedded server with a URL", svc.Embedded(), svc.URL())
	}
	running, err := svc.Start(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	emit, err := client.NewEmitter(svc.JetStream(), "urn:test:service")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	if err := emit.Submitted(ctx, events.Submitted{TaskID: "t1", AgentURL: agent.URL(), SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	out := servicetest.Collect(t, svc.JetStream(), svc.Config())
	out.WaitFor(t, "card.pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, "t1")) == 1 })
	servicetest.Flushed(t, emit, time.Minute)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := svc.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	scfg := svc.Config()
	if n, err := service.Backlog(ctx, svc.JetStream(), scfg.LifecycleStream, scfg.ConsumerNames()...); err != nil || n != 0 {
		t.Fatalf("Backlog() = %d, %v; want 0, nil", n, err)
	}
	sources := map[string]bool{}
	for _, ev := range out.All("") {
		sources[ev.Source] = true
	}
	if !sources["carddrift/svc-1"] && !sources["carddrift/svc-2"] {
		t.Errorf("event sources %v, want the workers svc-1 or svc-2", sources)
	}
	if err := running.Stop(); err != nil {
		t.Errorf("Stop() = %v, want nil", err)
	}
	if err := svc.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := svc.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

// Open fails on invalid worker options and leaves nothing running.
func TestOpenInvalidWorker(t *testing.T) {
	_, err := service.Open(context.Background(), service.Options{DataDir: t.TempDir(), Worker: worker.Options{}})
	if !errors.Is(err, service.ErrInvalidOptions) {
		t.Fatalf("Open with no worker name = %v, want ErrInvalidOptions", err)
	}
}

// The embedded server lets carddrift's streams reserve their byte limits
// whatever the disk holds: nats-server's own default maximum is 75% of the
// disk free at start, so a machine with less free disk than the limits
// (here: limits larger than any disk) could not start serve. The streams
// hold only what is written; the limits are what they may grow to.
func TestEmbeddedReservesTheLimits(t *testing.T) {
	ctx := context.Background()
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		cfg := store.DefaultConfig()
		cfg.Partitions = 1
		cfg.Storage = storage
		cfg.StorageLimit = 64 << 40 // 64 TiB
		svc, err := service.Open(ctx, service.Options{DataDir: t.TempDir(), Config: cfg,
			Worker: worker.Options{Name: "reserve", Fetch: servicetest.LoopbackFetch()}})
		if err != nil {
			t.Fatalf("%v storage, limits of 64 TiB: Open() = %v", storage, err)
		}
		info, err := svc.JetStream().Stream(ctx, cfg.LifecycleStream)
		if err != nil {
			t.Fatal(err)
		}
		scfg := svc.Config()
		if got, want := info.CachedInfo().Config.MaxBytes, scfg.Limits()[cfg.LifecycleStream]; got != want {
			t.Errorf("%v storage: %s MaxBytes = %d, want %d", storage, cfg.LifecycleStream, got, want)
		}
		svc.Close()
	}
}

// A service under the smallest memory budget, flooded with large client
// cards and large pins on distinct tasks through its embedded JetStream:
// every task is pinned, and the pin cache and the parsed cards never count
// more than their shares (the count bounds, 100,000 pins and 1,024 cards,
// would have kept them all).
func TestServiceMemoryBudget(t *testing.T) {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	svc, err := service.Open(ctx, service.Options{
		DataDir: t.TempDir(), Config: cfg, PinCache: 100_000, MemoryBudget: budget.Minimum,
		Worker: worker.Options{Name: "budget", Fetch: servicetest.LoopbackFetch(), DrainTimeout: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	running, err := svc.Start(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { running.Stop() })
	emit, err := client.NewEmitter(svc.JetStream(), "urn:test:budget")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	const agent = "http://127.0.0.1:9"
	const cards, pins = 24, 24
	for i := range cards {
		card := fmt.Sprintf(`{"name":"c%d","version":"1","url":%q,"skills":[{"id":"s","name":"s","tags":["t"]}],"description":"%s"}`,
			i, agent, strings.Repeat("d", 512<<10))
		if err := emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprintf("card-%d", i), AgentURL: agent, SkillID: "s", Card: []byte(card)}); err != nil {
			t.Fatal(err)
		}
	}
	scopes := map[string][]string{}
	for s := range 4 {
		for j := range 256 {
			scopes[fmt.Sprint("scheme-", s)] = append(scopes[fmt.Sprint("scheme-", s)], fmt.Sprintf("scope-%d-%s", j, strings.Repeat("s", 400)))
		}
	}
	for i := range pins {
		if err := emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprintf("pin-%d", i), AgentURL: agent, SkillID: "s",
			CardDigest: "sha256:" + strings.Repeat("0", 64), Requires: events.Requires{Scopes: scopes}}); err != nil {
			t.Fatal(err)
		}
	}
	servicetest.Flushed(t, emit, time.Minute)
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := svc.WaitDrained(dctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"card-0", fmt.Sprint("card-", cards-1), "pin-0", fmt.Sprint("pin-", pins-1)} {
		if _, _, err := svc.Stores().Pins.Get(ctx, id); err != nil {
			t.Errorf("task %s not pinned: %v", id, err)
		}
	}
	sh := budget.Split(budget.Minimum)
	m := svc.MemoryStats()
	t.Logf("memory stats: %+v; shares %+v", m, sh)
	if m.Pins.Bytes > int64(sh.Pins) || m.Pins.Evictions == 0 {
		t.Errorf("pin cache holds %d bytes after %d evictions, want at most %d (its share) and evictions", m.Pins.Bytes, m.Pins.Evictions, sh.Pins)
	}
	if m.CardBytes > int64(sh.Cards) || m.Cards == 0 || m.Cards >= cards {
		t.Errorf("card cache holds %d cards of %d bytes, want some but fewer than %d within %d (its share)", m.Cards, m.CardBytes, cards, sh.Cards)
	}
}

func TestPinSizeAndDetach(t *testing.T) {
	body := `{"name":"n","version":"` + strings.Repeat("v", 64) + `","url":"https://a.example","description":"` + strings.Repeat("d", 1<<19) + `"}`
	c, err := detector.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p := task.Pin{TaskID: "t", AgentURL: "https://a.example", CardVersion: c.Version, Reported: []string{"a", "b"},
		Requirements: detector.Requirements{Scopes: map[string][]string{"oauth": {strings.Repeat("s", 1000)}}}}
	size := service.PinSize(p)
	if min := int64(unsafe.Sizeof(p)) + 64 + 1000; size < min || size > min+4096 {
		t.Errorf("PinSize = %d, want about %d (the struct and its strings)", size, min)
	}
	d := service.DetachPin(p)
	if d.CardVersion != p.CardVersion || d.Requirements.Scopes["oauth"][0] != p.Requirements.Scopes["oauth"][0] || len(d.Reported) != 2 {
		t.Fatalf("DetachPin(p) = %+v, want p's content", d)
	}
	if unsafe.StringData(d.CardVersion) == unsafe.StringData(p.CardVersion) {
		t.Error("DetachPin(p).CardVersion shares the parsed card's memory")
	}
}

// TestPinSizeCoversHeap checks PinSize against the heap for pins as the
// cache keeps them (detached) with requirements near the payload limit.
func TestPinSizeCoversHeap(t *testing.T) {
	scopes := map[string][]string{}
	for s := range 7 {
		for j := range 256 {
			scopes[fmt.Sprint("scheme-", s)] = append(scopes[fmt.Sprint("scheme-", s)], fmt.Sprintf("scope-%d-%s", j, strings.Repeat("s", 384)))
		}
	}
	const n = 20
	var est int64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := make([]task.Pin, n)
	for i := range keep {
		keep[i] = service.DetachPin(task.Pin{TaskID: fmt.Sprint("t", i), Requirements: detector.Requirements{Scopes: scopes}})
		est += service.PinSize(keep[i])
	}
	runtime.GC()
	runtime.GC() // and the encoder's pooled buffer, which survives one
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(keep)
	t.Logf("%d pins of ~700 KiB requirements: live %d bytes, PinSize %d (%.2f)", n, live, est, float64(est)/float64(live))
	if live > est+est/20 {
		t.Errorf("%d pins keep %d bytes live, PinSize estimates %d: under by more than 5%%", n, live, est)
	}
}
