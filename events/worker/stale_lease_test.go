package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
)

// TestStaleLeaseCannotContradictPin reproduces, deterministically, the race
// that made the 400-agent demo abort healthy tasks: a lease holds the
// agent's old card (fetched before the rotation, valid for a minute); the
// vendor rotates the card; a client discovers the new card and submits a
// task pinned on it; the task's capability-dependent transition comes inside
// the lease. The lease's observation was verified before the pin, so it
// cannot contradict it: the worker revalidates unconditionally (one fetch)
// and finds the pinned card live — no card.drift.
func TestStaleLeaseCannotContradictPin(t *testing.T) {
	r := newRig(t, func(o *worker.Options) {
		o.Fetch.MinLease = time.Minute // the lease holds for the whole test
	})
	ctx := context.Background()
	// The agent serves its card with a long max-age and an ETag derived from
	// the card's version only (as some servers do): after a rotation that
	// keeps the version, a revalidation answers 304 although the content
	// changed.
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("max-age=60")
	agent.SetETag(`"v1.0.0"`)
	url := agent.URL()

	// A first-fetch task makes carddrift take the lease on the old card.
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "early", AgentURL: url, SkillID: "summarize"}))
	r.Eventually("the early task's pin", func() bool { return len(r.Out().Events(events.TypePinned, "early")) == 1 })
	oldDigest := r.Out().Events(events.TypePinned, "early")[0].Data.(events.Pinned).Digest

	// The vendor rotates (same version, so the same ETag); the client reads
	// the new card and plans a streaming-free task against it.
	agent.Set(servicetest.WriteupT40)
	newCard := string(agent.Served(servicetest.WriteupT40))
	newDigest, err := detector.Digest([]byte(newCard))
	if err != nil {
		t.Fatal(err)
	}
	if newDigest == oldDigest {
		t.Fatal("the rotation did not change the digest")
	}
	time.Sleep(20 * time.Millisecond) // the pin is made after the lease's full fetch
	before := agent.Requests()
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "late", AgentURL: url, SkillID: "translate", Card: []byte(newCard)}))
	r.Eventually("the late task's pin", func() bool { return len(r.Out().Events(events.TypePinned, "late")) == 1 })
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "late", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	r.Eventually("the transition handled", func() bool {
		return r.Handled(events.TypeRequest, "unchanged")+r.Handled(events.TypeRequest, "drift") == 1
	})

	if d := r.Out().Events(events.TypeDrift, "late"); len(d) != 0 {
		dr := d[0].Data.(events.Drift)
		t.Fatalf("card.drift for a task pinned on the live card: %s, live %s (pinned %s)", dr.Verdict.Reason, dr.Live.Digest, dr.Pinned.Digest)
	}
	if got := agent.Requests() - before; got != 1 {
		t.Fatalf("the agent answered %d requests for the transition, want exactly 1 (the unconditional revalidation)", got)
	}
	if n := r.Handled(events.TypeRequest, "unchanged"); n != 1 {
		t.Fatalf("transition outcome unchanged = %d, want 1", n)
	}
}
