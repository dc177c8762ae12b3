package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// TestQueuedEventsAreNotRedelivered: one task's transitions each wait for a
// slow agent (1 s a fetch, no-cache, against a 2 s AckWait), so most of
// them sit queued behind the task's earlier ones. The queued events stay in
// progress: the server does not redeliver them meanwhile. (When only the
// running one was kept alive, every queued event was redelivered each
// AckWait and queued again — a second copy of its bytes the in-flight bound
// no longer counted, handled once more — so that the copies grew with the
// square of the queue.)
func TestQueuedEventsAreNotRedelivered(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("no-cache")
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "queued", AgentURL: agent.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))
	r.Eventually("the pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == 1 })
	before := deliveries(t, r)

	agent.SetDelay(time.Second)
	const n = 8
	for i := range n {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "queued", AgentURL: agent.URL(), Method: "message/stream", Attempt: i + 1}))
	}
	r.Drained(t, 60*time.Second)
	got := deliveries(t, r) - before
	t.Logf("%d transitions of one task: %d deliveries, %d fetches", n, got, agent.Requests())
	if got > n+1 {
		t.Fatalf("%d transitions of one task were delivered %d times: the events queued behind the task's running one were redelivered meanwhile", n, got)
	}
}

// deliveries is how many deliveries the rig's lifecycle consumers made,
// redeliveries included.
func deliveries(t *testing.T, r *servicetest.Rig) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n uint64
	for _, name := range r.Config.ConsumerNames() {
		c, err := r.JS.Consumer(ctx, r.Config.LifecycleStream, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += info.Delivered.Consumer
	}
	return n
}
