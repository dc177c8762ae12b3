package test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// The suites of this package run on the servicetest rig, under the short
// names below. cluster_test.go builds a rig without stores around a real
// deployment's connection (&rig{t, js, nc, cfg}); the methods it calls work
// on that too.

// rig is carddrift running in-process (servicetest.Rig): embedded
// JetStream, the stores, and the workers a test starts.
type rig struct {
	t      testing.TB
	js     jetstream.JetStream
	nc     *nats.Conn
	cfg    store.Config
	stores *store.Stores[task.Pin]
	emit   *client.Emitter
	wt     *servicetest.Rig
}

// testConfig is the rig's stream layout (servicetest.DefaultConfig).
func testConfig() store.Config { return servicetest.DefaultConfig() }

func newRig(t testing.TB, cfg store.Config) *rig {
	t.Helper()
	wt := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { *c = cfg }, Source: "test-client"})
	return &rig{t: t, js: wt.JS, nc: wt.Conn, cfg: wt.Config, stores: wt.Stores, emit: wt.Emit, wt: wt}
}

// startWorker runs a worker until the test ends (or stop is called).
func (r *rig) startWorker(name string, tweak func(*worker.Options)) (stop func()) {
	r.t.Helper()
	return r.wt.StartWorker(name, tweak)
}

// startWorkerOn runs a worker over its own connection (Rig.StartWorkerOn).
func (r *rig) startWorkerOn(t testing.TB, url, name string, tweak func(*worker.Options)) (*nats.Conn, func()) {
	t.Helper()
	return r.wt.StartWorkerOn(t, url, name, tweak)
}

// drained waits until every lifecycle event published so far is
// acknowledged (or terminated) by the workers.
func (r *rig) drained(t testing.TB, timeout time.Duration) {
	t.Helper()
	if r.emit != nil {
		servicetest.Flushed(t, r.emit, timeout)
	}
	servicetest.Drained(t, r.js, r.cfg, timeout)
}

// dumpLifecycle logs the lifecycle consumers' state, for failure reports.
func (r *rig) dumpLifecycle(t testing.TB) { servicetest.DumpLifecycle(t, r.js, r.cfg) }

// collect starts collecting every card.* event stored in the events stream.
func (r *rig) collect() *outbound {
	r.t.Helper()
	return &outbound{servicetest.Collect(r.t, r.js, r.cfg)}
}

// outbound is a servicetest.Collector.
type outbound struct{ *servicetest.Collector }

func (o *outbound) all(typ string) []events.Event                    { return o.All(typ) }
func (o *outbound) drifts(taskID string) []events.Drift              { return o.Drifts(taskID) }
func (o *outbound) unreachableOf(taskID string) []events.Unreachable { return o.Unreachable(taskID) }

// waitFor waits until cond holds for the collected events, or fails.
func (o *outbound) waitFor(t testing.TB, what string, cond func(*outbound) bool) {
	t.Helper()
	o.WaitFor(t, what, func(*servicetest.Collector) bool { return cond(o) })
}

// countBy returns how many events of typ each task has.
func countBy(o *outbound, typ string) map[string]int { return o.CountBy(typ) }

// eventually is natstest.Eventually.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	natstest.Eventually(t, timeout, what, cond)
}

// The pinning write-up's cards (servicetest.WriteupT0, WriteupT40).
const (
	writeupT0  = servicetest.WriteupT0
	writeupT40 = servicetest.WriteupT40
)
