package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// card.drift for one (task, pinned digest, live digest, rule ids) is
// published once even after the events stream's duplicate window has passed,
// when the task's rule sets alternate (an artifact adds
// artifact-type-undeclared, a plain transition does not): the pin remembers
// every drift id it reported (task.Pin.Reported), not only the last.
// The public contract (schemas/README.md): "published once, however often workers retry or restart or the
// same lifecycle event is redelivered". (Found as a bug: the pin once kept
// only the last id.)
func TestDriftOnceBeyondDedupWindow(t *testing.T) {
	cfg := testConfig()
	cfg.EventsDuplicates = time.Second // the default is 2m; the effect is the same after it
	r := newRig(t, cfg)
	out := r.collect()
	a := servicetest.NewAgent(t, writeupT40)
	r.startWorker("w", nil)
	ctx := context.Background()
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "once", AgentURL: a.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed,
		Card: []byte(strings.ReplaceAll(writeupT0, "AGENT", a.URL()))}))
	round := func() {
		must(t, r.emit.Artifact(ctx, events.Artifact{TaskID: "once", AgentURL: a.URL(), ArtifactID: "x", MediaTypes: []string{"application/pdf"}}))
		must(t, r.emit.Request(ctx, events.Request{TaskID: "once", AgentURL: a.URL(), Method: "tasks/sendSubscribe", Attempt: 1}))
		r.drained(t, 10*time.Second)
	}
	round()
	time.Sleep(1500 * time.Millisecond) // past the duplicate window
	round()
	out.CaughtUp(t)
	ids := map[string]int{}
	for _, ev := range out.all(events.TypeDrift) {
		ids[ev.ID]++
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("card.drift %s published %d times for the same task, cards and rules", id, n)
		}
	}
	if len(ids) != 2 {
		t.Errorf("%d distinct card.drift, want 2 (with and without artifact-type-undeclared)", len(ids))
	}
}
