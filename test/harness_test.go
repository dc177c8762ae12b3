package test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/storetest"
)

// startJS starts an embedded JetStream server with t.TempDir() storage and
// returns a connection to it; both are closed when the test ends.
func startJS(t testing.TB) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, nc, js := storetest.StartJetStream(t)
	t.Cleanup(func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv, nc, js
}

// rig is carddrift running in-process: embedded JetStream, the stores, and
// one or more workers.
type rig struct {
	t      testing.TB
	js     jetstream.JetStream
	nc     *nats.Conn
	cfg    store.Config
	stores *store.Stores[task.Pin]
	emit   *events.Emitter
}

func testConfig() store.Config {
	cfg := store.DefaultConfig()
	cfg.Partitions = 4
	cfg.AckWait = 2 * time.Second
	return cfg
}

func newRig(t testing.TB, cfg store.Config) *rig {
	t.Helper()
	_, nc, js := startJS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open[task.Pin](ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	emit, err := events.NewEmitter(js, "test-client")
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, js: js, nc: nc, cfg: cfg, stores: st, emit: emit}
}

// startWorker runs a worker until the test ends (or stop is called).
func (r *rig) startWorker(name string, tweak func(*worker.Options)) (stop func()) {
	r.t.Helper()
	opts := worker.Options{
		Name: name, Config: r.cfg,
		Pins: r.stores.Pins, Cards: r.stores.Cards, Leases: r.stores.Leases,
		Fetch: fetcher.Options{
			Allow:          []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			TotalTimeout:   3 * time.Second,
			ConnectTimeout: time.Second,
			MinLease:       -1, // no-cache means every transition revalidates, even within a second
		},
		DrainTimeout: 5 * time.Second,
		PinnedTTL:    2 * time.Second,
	}
	if tweak != nil {
		tweak(&opts)
	}
	w, err := worker.New(r.js, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-w.Ready():
	case err := <-done:
		r.t.Fatalf("worker stopped: %v", err)
	case <-time.After(10 * time.Second):
		r.t.Fatal("worker not ready")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				r.t.Errorf("worker Run: %v", err)
			}
			w.Close()
		})
	}
	r.t.Cleanup(stop)
	return stop
}

// outbound collects every card.* event stored in the events stream.
type outbound struct {
	mu  sync.Mutex
	evs []events.Event
	cc  jetstream.ConsumeContext
}

func (r *rig) collect() *outbound {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := r.js.OrderedConsumer(ctx, r.cfg.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	o := &outbound{}
	o.cc, err = cons.Consume(func(m jetstream.Msg) {
		ev, err := events.Decode(m)
		if err != nil {
			r.t.Errorf("outbound event does not decode: %v", err)
			return
		}
		o.mu.Lock()
		o.evs = append(o.evs, ev)
		o.mu.Unlock()
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(o.cc.Stop)
	return o
}

func (o *outbound) all(typ string) []events.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []events.Event
	for _, ev := range o.evs {
		if typ == "" || ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// waitFor waits until cond holds for the collected events, or fails.
func (o *outbound) waitFor(t testing.TB, what string, cond func(*outbound) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond(o) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; have %d events: %v", what, len(o.all("")), types(o.all("")))
}

func types(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+"("+e.TaskID()+")")
	}
	return out
}

func (o *outbound) drifts(taskID string) []events.Drift {
	var out []events.Drift
	for _, ev := range o.all(events.TypeDrift) {
		if d := ev.Data.(events.Drift); d.TaskID == taskID {
			out = append(out, d)
		}
	}
	return out
}

// agent is an httptest A2A agent whose card can be swapped.
type agent struct {
	srv      *httptest.Server
	mu       sync.Mutex
	card     []byte
	status   int
	requests atomic.Int64
}

func newAgent(t testing.TB, card string) *agent {
	a := &agent{card: []byte(card), status: 200}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/agent-card.json" {
			http.NotFound(w, r)
			return
		}
		a.requests.Add(1)
		a.mu.Lock()
		card, status := a.card, a.status
		a.mu.Unlock()
		if status != 200 {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(card)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agent) setCard(card string) {
	a.mu.Lock()
	a.card = []byte(card)
	a.mu.Unlock()
}

func (a *agent) setStatus(s int) {
	a.mu.Lock()
	a.status = s
	a.mu.Unlock()
}

func (a *agent) URL() string { return a.srv.URL }
