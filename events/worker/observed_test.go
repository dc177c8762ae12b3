package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
)

// card.observed as contract v1.3 publishes it: at the first fetch, not
// for the revalidations that tell nothing new, then at the heartbeat,
// standing for all of them (fetches, since); a change is published at
// once, and as v1.2 shaped it (no fetches: it stands for its own fetch).
func TestObservedOnChangeOrHeartbeat(t *testing.T) {
	clk := servicetest.NewClock()
	r := newRig(t, func(o *worker.Options) {
		o.Now = clk.Now
		o.Fetch.ObserveHeartbeat = time.Minute
	})
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("max-age=1")
	agent.SetETag(`"v1"`)
	url := agent.URL()
	observed := func() []events.Observed {
		var out []events.Observed
		for _, ev := range r.Out().All(events.TypeObserved) {
			out = append(out, ev.Data.(events.Observed))
		}
		return out
	}
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "t", AgentURL: url, SkillID: "summarize"}))
	r.Eventually("the pin", func() bool { return len(r.Out().Events(events.TypePinned, "t")) == 1 })
	transition := func(n int) {
		t.Helper()
		clk.Advance(2 * time.Second) // past the lease: a revalidation
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "t", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
		r.Eventually("the transition handled", func() bool { return agent.Requests() == int64(n) })
	}
	for i := range 4 {
		transition(2 + i)
	}
	r.Eventually("the first fetch's card.observed", func() bool { return len(observed()) == 1 })
	if o := observed()[0]; o.Status != 200 || o.Fetches != 0 || !o.Since.IsZero() {
		t.Fatalf("first card.observed = %+v, want a 200 standing for its own fetch", o)
	}
	if n := agent.NotModified(); n != 4 {
		t.Fatalf("%d revalidations answered 304, want 4", n)
	}

	since := clk.Now().Add(-6 * time.Second) // the first revalidation
	clk.Advance(time.Minute)
	transition(6)
	r.Eventually("the heartbeat", func() bool { return len(observed()) == 2 })
	if o := observed()[1]; o.Status != 304 || o.Fetches != 5 || !o.Since.Equal(since.UTC()) {
		t.Fatalf("heartbeat = %+v, want a 304 standing for 5 fetches since %v", o, since)
	}

	agent.Set(servicetest.WriteupT40)
	agent.SetETag(`"v2"`)
	transition(7)
	r.Eventually("the change", func() bool { return len(observed()) == 3 })
	if o, first := observed()[2], observed()[0]; o.Status != 200 || o.Digest == first.Digest || o.Fetches != 0 {
		t.Fatalf("change = %+v, want a 200 of another digest standing for its own fetch", o)
	}
}
