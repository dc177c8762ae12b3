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

func rulesOf(d events.Drift) map[string]bool {
	m := map[string]bool{}
	for _, f := range d.Findings {
		m[f.Rule] = true
	}
	return m
}

// driftWith reports whether a card.drift of the task has the rule and, unless
// action is "", the action.
func driftWith(o *outbound, task, rule string, action detector.Action) bool {
	for _, d := range o.drifts(task) {
		if rulesOf(d)[rule] && (action == "" || d.Verdict.Action == action) {
			return true
		}
	}
	return false
}

func TestPinningWriteUpEndToEnd(t *testing.T) {
	r := newRig(t, testConfig())
	a := servicetest.NewAgent(t, writeupT0)
	out := r.collect()
	r.startWorker("w1", nil)
	ctx := context.Background()

	// T0: discovery; two tasks planned against the card.
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "t-stream", AgentURL: a.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true, Security: []string{"bearer"}}, Posture: detector.FailClosed}))
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "t-degrade", AgentURL: a.URL(), SkillID: "summarize",
		Requires: events.Requires{Security: []string{"bearer"}}, Posture: detector.Degrade, Idempotent: true}))
	out.waitFor(t, "two pins", func(o *outbound) bool { return len(o.all(events.TypePinned)) == 2 })
	for _, ev := range out.all(events.TypePinned) {
		if p := ev.Data.(events.Pinned); p.Source != events.PinFirstFetch || !strings.HasPrefix(p.Digest, "sha256:") {
			t.Fatalf("card.pinned = %+v, want a first-fetch pin", p)
		}
	}

	// T0+40s: the vendor rotates its card.
	a.Set(writeupT40)

	// tasks/sendSubscribe: a streaming transition → abort with streaming-disabled.
	must(t, r.emit.Request(ctx, events.Request{TaskID: "t-stream", AgentURL: a.URL(), Method: "tasks/sendSubscribe", Attempt: 1}))
	out.waitFor(t, "abort on streaming-disabled", func(o *outbound) bool {
		return driftWith(o, "t-stream", detector.RuleStreamingDisabled, detector.Abort)
	})

	// tasks/get returns input-required naming translate → unmodeled-skill.
	must(t, r.emit.Request(ctx, events.Request{TaskID: "t-stream", AgentURL: a.URL(), Method: "tasks/get", Attempt: 1}))
	must(t, r.emit.Status(ctx, events.Status{TaskID: "t-stream", AgentURL: a.URL(), State: "input-required", SkillID: "translate"}))
	out.waitFor(t, "unmodeled-skill", func(o *outbound) bool { return driftWith(o, "t-stream", detector.RuleUnmodeledSkill, "") })

	// -32602 on the stale card, then a retry: revalidation and blind-retry.
	must(t, r.emit.Error(ctx, events.Error{TaskID: "t-stream", AgentURL: a.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"}))
	must(t, r.emit.Request(ctx, events.Request{TaskID: "t-stream", AgentURL: a.URL(), Method: "tasks/send", Attempt: 2}))
	out.waitFor(t, "blind-retry", func(o *outbound) bool { return driftWith(o, "t-stream", detector.RuleBlindRetry, detector.Abort) })

	// The degrade-posture idempotent summarize task re-plans at its next
	// capability-dependent transition.
	must(t, r.emit.Status(ctx, events.Status{TaskID: "t-degrade", AgentURL: a.URL(), State: "TASK_STATE_INPUT_REQUIRED"}))
	out.waitFor(t, "replan", func(o *outbound) bool {
		ds := o.drifts("t-degrade")
		return len(ds) > 0 && ds[len(ds)-1].Verdict.Action == detector.Replan
	})
	for _, d := range out.drifts("t-degrade") {
		if rulesOf(d)[detector.RuleStreamingDisabled] && d.Verdict.Action == detector.Abort {
			t.Errorf("non-streaming task aborted: %+v", d.Verdict)
		}
	}

	// Once per (task, pinned, live, rules): no duplicate ids in the stream.
	seen := map[string]bool{}
	for _, ev := range out.all(events.TypeDrift) {
		if seen[ev.ID] {
			t.Errorf("card.drift %s stored twice", ev.ID)
		}
		seen[ev.ID] = true
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var _ = time.Second

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
