package test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// Helpers shared by the fingerprint, hostile, kill and benchmark suites.

// fakeClock is a settable clock for leases and full-fetch intervals
// (worker.Options.Now). Timeouts always use the real clock.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// eventually polls cond every 10ms until it holds or timeout passes, then
// fails the test with what.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lifecycleBacklog returns how many lifecycle events the partition consumers
// have not yet acknowledged (pending plus in flight), summed over partitions.
func lifecycleBacklog(ctx context.Context, js jetstream.JetStream, cfg store.Config) (uint64, error) {
	var n uint64
	for p := range max(cfg.Partitions, 1) {
		cons, err := js.Consumer(ctx, cfg.LifecycleStream, cfg.ConsumerNameOf(p))
		if err != nil {
			return 0, fmt.Errorf("consumer %s: %w", cfg.ConsumerNameOf(p), err)
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return 0, err
		}
		n += info.NumPending + uint64(info.NumAckPending)
	}
	return n, nil
}

// drained waits until every lifecycle event published so far is acknowledged
// (or terminated) by the workers.
func (r *rig) drained(t testing.TB, timeout time.Duration) {
	t.Helper()
	var last uint64
	var lastErr error
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last, lastErr = lifecycleBacklog(ctx, r.js, r.cfg)
		cancel()
		if lastErr == nil && last == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("lifecycle stream not drained after %v: backlog %d (%v)", timeout, last, lastErr)
}

// startWorkerOn runs a worker over its own JetStream connection and stores
// (so that closing that connection cuts the worker off entirely, as a kill
// would). It returns the worker's connection and a stop func, also run at
// cleanup, which cancels Run and waits for it within the drain timeout.
func (r *rig) startWorkerOn(t testing.TB, url, name string, tweak func(*worker.Options)) (*nats.Conn, func()) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := store.Bind[task.Pin](ctx, js, r.cfg)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	opts := workerOptions(r.cfg, name, st)
	if tweak != nil {
		tweak(&opts)
	}
	w, err := worker.New(js, opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("worker %s stopped: %v", name, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("worker %s not ready", name)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopRun()
			select {
			case <-done: // a cut-off worker may report its dead connection; that is the point
			case <-time.After(opts.DrainTimeout + 10*time.Second):
				t.Errorf("worker %s: Run did not return after its drain timeout", name)
			}
			w.Close()
			nc.Close()
		})
	}
	t.Cleanup(stop)
	return nc, stop
}

// workerOptions are the rig's worker options (see rig.startWorker) over the
// given stores.
func workerOptions(cfg store.Config, name string, st *store.Stores[task.Pin]) worker.Options {
	return worker.Options{
		Name: name, Config: cfg,
		Pins: st.Pins, Cards: st.Cards, Leases: st.Leases,
		Fetch:        loopbackFetch(),
		DrainTimeout: 5 * time.Second,
		PinnedTTL:    2 * time.Second,
	}
}

// loopbackFetch is the rig's fetcher configuration: loopback agents allowed,
// every transition revalidates (no lower lease clamp).
func loopbackFetch() fetcher.Options {
	return fetcher.Options{
		Allow:          []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		TotalTimeout:   3 * time.Second,
		ConnectTimeout: time.Second,
		MinLease:       -1,
	}
}

// countBy returns how many events of typ each task has.
func countBy(o *outbound, typ string) map[string]int {
	m := map[string]int{}
	for _, ev := range o.all(typ) {
		m[ev.TaskID()]++
	}
	return m
}

// unreachableOf returns the card.unreachable events of a task.
func (o *outbound) unreachableOf(taskID string) []events.Unreachable {
	var out []events.Unreachable
	for _, ev := range o.all(events.TypeUnreachable) {
		if u := ev.Data.(events.Unreachable); u.TaskID == taskID {
			out = append(out, u)
		}
	}
	return out
}

// dumpLifecycle logs the lifecycle consumers' state, for failure reports.
func (r *rig) dumpLifecycle(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for p := range max(r.cfg.Partitions, 1) {
		cons, err := r.js.Consumer(ctx, r.cfg.LifecycleStream, r.cfg.ConsumerNameOf(p))
		if err != nil {
			t.Logf("consumer %s: %v", r.cfg.ConsumerNameOf(p), err)
			continue
		}
		info, err := cons.Info(ctx)
		if err != nil {
			t.Logf("consumer %s: %v", r.cfg.ConsumerNameOf(p), err)
			continue
		}
		t.Logf("consumer %s: pending %d, ack pending %d, redelivered %d, waiting pulls %d, delivered %d, ack floor %d, priority groups %+v",
			info.Name, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting,
			info.Delivered.Stream, info.AckFloor.Stream, info.PriorityGroups)
	}
}
