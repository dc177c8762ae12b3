package servicetest

import (
	"bytes"
	"cmp"
	"context"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/natstest"
)

// Options configure a Rig. Zero fields take the defaults noted.
type Options struct {
	// Configure adjusts DefaultConfig before the stores are provisioned.
	Configure func(*store.Config)
	// Workers names the workers Start runs.
	Workers []string
	// Worker adjusts the options of every worker the rig starts.
	Worker func(*worker.Options)
	// Source is the CloudEvents source of the rig's Emitter (default
	// "urn:client:servicetest").
	Source string
}

// Rig is carddrift in process against an embedded JetStream server: the
// stores, workers run through events/service, an Emitter and the workers'
// shared metrics. Everything it starts stops when the test ends.
type Rig struct {
	T       testing.TB
	Server  *server.Server
	Conn    *nats.Conn
	JS      jetstream.JetStream
	Config  store.Config
	Stores  *store.Stores[task.Pin]
	Emit    *client.Emitter
	Metrics *worker.Metrics // every rig worker's, unless an adjustment sets its own

	opts    Options
	outOnce sync.Once
	out     *Collector
}

// DefaultConfig is store.DefaultConfig with 4 lifecycle partitions and a
// 2s AckWait (redeliveries within a test).
func DefaultConfig() store.Config {
	cfg := store.DefaultConfig()
	cfg.Partitions = 4
	cfg.AckWait = 2 * time.Second
	return cfg
}

// InMemory is the Options of an end-to-end rig: streams in memory on 2
// partitions, a 5s AckWait, the named workers draining within 3s.
func InMemory(workers ...string) Options {
	return Options{
		Configure: func(c *store.Config) {
			c.Partitions, c.Storage, c.AckWait = 2, jetstream.MemoryStorage, 5*time.Second
		},
		Workers: workers,
		Worker:  func(o *worker.Options) { o.DrainTimeout = 3 * time.Second },
	}
}

// Start starts the embedded server, provisions the stores and starts the
// workers opts names.
func Start(t testing.TB, opts Options) *Rig {
	t.Helper()
	srv, nc, js := natstest.StartJetStream(t)
	cfg := DefaultConfig()
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	cfg.SetDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open[task.Pin](ctx, js, cfg)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	// Tests publish bursts that the default buffer would drop part of.
	emit, err := client.NewEmitter(js, cmp.Or(opts.Source, "urn:client:servicetest"), publish.WithBuffer(1<<15))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	r := &Rig{T: t, Server: srv, Conn: nc, JS: js, Config: cfg, Stores: st, Emit: emit,
		Metrics: worker.NewMetrics(nil), opts: opts}
	for _, name := range opts.Workers {
		r.StartWorker(name, nil)
	}
	return r
}

// URL is the embedded server's client URL.
func (r *Rig) URL() string { return r.Server.ClientURL() }

// LoopbackFetch is the rig's fetcher configuration: loopback allowed, short
// timeouts, no lower lease clamp (no-cache revalidates every transition).
func LoopbackFetch() fetcher.Options {
	return fetcher.Options{
		Allow:          []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		TotalTimeout:   3 * time.Second,
		ConnectTimeout: time.Second,
		MinLease:       -1,
	}
}

// WorkerOptions returns the options of a rig worker, adjusted by
// Options.Worker and then by tweak (nil: none).
func (r *Rig) WorkerOptions(name string, tweak func(*worker.Options)) worker.Options {
	o := worker.Options{
		Name: name, Config: r.Config,
		Pins: r.Stores.Pins, Cards: r.Stores.Cards, Leases: r.Stores.Leases,
		Metrics:      r.Metrics,
		Fetch:        LoopbackFetch(),
		DrainTimeout: 5 * time.Second,
		PinnedTTL:    2 * time.Second,
	}
	for _, f := range []func(*worker.Options){r.opts.Worker, tweak} {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// NewWorker builds a rig worker without running it.
func (r *Rig) NewWorker(name string, tweak func(*worker.Options)) *worker.Worker {
	r.T.Helper()
	w, err := worker.New(r.JS, r.WorkerOptions(name, tweak))
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(func() { w.Close() })
	return w
}

// StartWorker runs a worker on the rig's connection until the test ends or
// stop is called (which waits for its drain). A worker that fails fails
// the test.
func (r *Rig) StartWorker(name string, tweak func(*worker.Options)) (stop func()) {
	r.T.Helper()
	svc, running := r.run(r.T, service.Options{Conn: r.Conn, Stores: r.Stores}, name, tweak)
	stop = sync.OnceFunc(func() {
		if err := running.Stop(); err != nil {
			r.T.Errorf("worker %s: Run = %v", name, err)
		}
		svc.Close()
	})
	r.T.Cleanup(stop)
	return stop
}

// StartWorkerOn runs a worker over a connection of its own to url, so that
// closing it cuts the worker off as a kill would; stop fails t if Run does
// not return within its drain timeout and 10s.
func (r *Rig) StartWorkerOn(t testing.TB, url, name string, tweak func(*worker.Options)) (*nats.Conn, func()) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	svc, running := r.run(t, service.Options{Conn: nc, Bind: true}, name, tweak)
	drain := r.WorkerOptions(name, tweak).DrainTimeout
	stop := sync.OnceFunc(func() {
		running.Cancel()
		select {
		case <-running.Done():
		case <-time.After(drain + 10*time.Second):
			t.Errorf("worker %s: Run did not return after its drain timeout", name)
		}
		svc.Close()
		nc.Close()
	})
	t.Cleanup(stop)
	return nc, stop
}

// run opens a one-worker service with the rig's config and starts it.
func (r *Rig) run(t testing.TB, so service.Options, name string, tweak func(*worker.Options)) (*service.Service, *service.Running) {
	t.Helper()
	so.Config, so.Worker = r.Config, r.WorkerOptions(name, tweak)
	if so.Stores == nil { // bound on the service's own connection
		so.Worker.Pins, so.Worker.Cards, so.Worker.Leases = nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := service.Open(ctx, so)
	if err != nil {
		t.Fatalf("worker %s: %v", name, err)
	}
	running, err := svc.Start(context.Background(), 10*time.Second)
	if err != nil {
		svc.Close()
		t.Fatalf("worker %s: %v", name, err)
	}
	return svc, running
}

// Out is the rig's Collector, started on first use.
func (r *Rig) Out() *Collector {
	r.outOnce.Do(func() { r.out = Collect(r.T, r.JS, r.Config) })
	return r.out
}

// Handled returns carddrift_events_total of typ and outcome.
func (r *Rig) Handled(typ, outcome string) int {
	var m dto.Metric
	if err := r.Metrics.Events.WithLabelValues(typ, outcome).Write(&m); err != nil {
		r.T.Fatal(err)
	}
	return int(m.GetCounter().GetValue())
}

// Drained waits until the rig's Emitter has published what it queued and
// the workers have acknowledged it, or fails t after timeout.
func (r *Rig) Drained(t testing.TB, timeout time.Duration) {
	t.Helper()
	Flushed(t, r.Emit, timeout)
	Drained(t, r.JS, r.Config, timeout)
}

// Flushed waits until em has published what it queued (Emitter.Flush) and
// nothing was dropped, or fails t after timeout.
func Flushed(t testing.TB, em *client.Emitter, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := em.Flush(ctx); err != nil || em.Dropped() != 0 {
		t.Fatalf("emitter not flushed after %v: %v, %d dropped", timeout, err, em.Dropped())
	}
}

// Drained is Rig.Drained for any connection to a deployment's streams.
func Drained(t testing.TB, js jetstream.JetStream, cfg store.Config, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := service.WaitDrained(ctx, js, cfg.LifecycleStream, cfg.ConsumerNames(), 20*time.Millisecond); err != nil {
		t.Fatalf("lifecycle stream not drained after %v: %v", timeout, err)
	}
}

// DumpLifecycle logs the state of the lifecycle consumers.
func DumpLifecycle(t testing.TB, js jetstream.JetStream, cfg store.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range cfg.ConsumerNames() {
		cons, err := js.Consumer(ctx, cfg.LifecycleStream, name)
		if err != nil {
			t.Logf("consumer %s: %v", name, err)
			continue
		}
		info, err := cons.Info(ctx)
		if err != nil {
			t.Logf("consumer %s: %v", name, err)
			continue
		}
		t.Logf("consumer %s: pending %d, ack pending %d, redelivered %d, waiting pulls %d, delivered %d, ack floor %d, priority groups %+v",
			info.Name, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting,
			info.Delivered.Stream, info.AckFloor.Stream, info.PriorityGroups)
	}
}

// Eventually is natstest.Eventually for WaitTimeout.
func (r *Rig) Eventually(what string, cond func() bool) {
	r.T.Helper()
	natstest.Eventually(r.T, WaitTimeout, what, cond)
}

// WaitPin waits until the task's pin has a digest and returns it.
func (r *Rig) WaitPin(taskID string) task.Pin {
	r.T.Helper()
	var pin task.Pin
	r.Eventually("pin of "+taskID, func() bool {
		p, _, err := r.Stores.Pins.Get(context.Background(), taskID)
		pin = p
		return err == nil && p.Digest != ""
	})
	return pin
}

// Verdicts subscribes as a planner with opts; the function returns the
// verdicts delivered so far for a task.
func (r *Rig) Verdicts(opts planner.Options) func(taskID string) []planner.Verdict {
	r.T.Helper()
	var mu sync.Mutex
	got := map[string][]planner.Verdict{}
	sub, err := planner.Subscribe(context.Background(), r.JS, opts, func(_ context.Context, v planner.Verdict) error {
		mu.Lock()
		got[v.TaskID] = append(got[v.TaskID], v)
		mu.Unlock()
		return nil
	})
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(func() { sub.Stop(); <-sub.Closed() })
	return func(taskID string) []planner.Verdict {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got[taskID])
	}
}

// Clock is a settable clock (worker.Options.Now); timeouts keep the real
// clock.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a Clock at the current time.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Output is a bytes.Buffer safe for concurrent use: what a command under
// test writes while the test reads it.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// EmbeddedJetStream is the embedded server of Example functions (no
// testing.TB): stop closes it and removes its storage. It panics on failure.
func EmbeddedJetStream() (js jetstream.JetStream, stop func()) {
	dir, err := os.MkdirTemp("", "carddrift-example-")
	if err != nil {
		panic(err)
	}
	srv, err := service.StartEmbedded(dir, 0)
	if err != nil {
		panic(err)
	}
	nc, js, err := service.ConnectJetStream(service.ConnectOptions{URL: srv.ClientURL()})
	if err != nil {
		panic(err)
	}
	return js, func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
}
