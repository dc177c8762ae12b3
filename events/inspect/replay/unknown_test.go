package replay_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// TestReevaluateUnknownPinnedBody re-evaluates verdicts on tasks pinned by a
// client digest of a card carddrift never saw (card v1; the agent serves
// v2): the worker's decision (detector.EvaluateUnknown) is reproduced,
// another posture or rule set changes it, and the recorded
// pinned-card-unknown finding is not counted twice.
func TestReevaluateUnknownPinnedBody(t *testing.T) {
	r := newRig(t, cardV2)
	ctx := context.Background()
	url := r.agent.URL()
	unseen := digest(t, cardV1)
	type tk struct {
		id         string
		posture    detector.Posture
		idempotent bool
		want       detector.Action
	}
	tks := []tk{
		{"u-fc", detector.FailClosed, true, detector.Abort},
		{"u-deg", detector.Degrade, true, detector.Replan},
		{"u-deg-once", detector.Degrade, false, detector.Abort},
	}
	for _, k := range tks {
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: k.id, AgentURL: url, SkillID: "summarize",
			Posture: k.posture, Idempotent: k.idempotent, CardDigest: unseen}); err != nil {
			t.Fatal(err)
		}
		if err := r.Emit.Request(ctx, events.Request{TaskID: k.id, AgentURL: url, Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypeDrift, len(tks))
	rd := r.reader()

	reevaluate := func(t *testing.T, re replay.Reevaluation) []change {
		t.Helper()
		rep, out := reevaluate(t, rd, re, len(tks))
		for _, d := range rep.Differences {
			var rules []string
			for _, f := range d.Findings {
				rules = append(rules, f.Rule)
			}
			if re.Rules == nil && !slices.Equal(rules, []string{detector.RulePinnedCardUnknown}) {
				t.Errorf("%s: re-evaluated findings %v, want one pinned-card-unknown", d.TaskID, rules)
			}
		}
		return out
	}

	// What the worker published.
	tl, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]detector.Action{}
	for _, e := range tl.Entries {
		if d, ok := e.Data.(events.Drift); ok {
			got[d.TaskID] = d.Verdict.Action
		}
	}
	for _, k := range tks {
		if got[k.id] != k.want {
			t.Errorf("%s: published %q, want %s", k.id, got[k.id], k.want)
		}
	}

	disable, err := replay.ParseRules(strings.NewReader(`{"disable":["pinned-card-unknown"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		re   replay.Reevaluation
		want []change
	}{
		{"as recorded", replay.Reevaluation{}, nil},
		{"fail-closed", replay.Reevaluation{Posture: detector.FailClosed}, []change{{"u-deg", detector.Replan, detector.Abort}}},
		{"degrade", replay.Reevaluation{Posture: detector.Degrade}, []change{{"u-fc", detector.Abort, detector.Replan}}},
		{"pinned-card-unknown disabled", replay.Reevaluation{Rules: disable}, []change{
			{"u-deg", detector.Replan, detector.Continue}, {"u-deg-once", detector.Abort, detector.Continue}, {"u-fc", detector.Abort, detector.Continue}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reevaluate(t, tc.re); !slices.Equal(got, tc.want) {
				t.Errorf("Reevaluate = %v, want %v", got, tc.want)
			}
		})
	}
}

// A pin's body that carddrift learns only after the verdict (the agent
// served it later, and its body was stored) does not change what
// re-evaluation reproduces: the worker judged without it (its card.drift's
// pinned has no fingerprint), and so does re-evaluation. Under load, the
// demo's re-evaluation check failed this way: a client-digest pin judged
// pinned-card-unknown, re-judged later with the body by then stored.
func TestReevaluateBodyLearnedLater(t *testing.T) {
	r := newRig(t, cardV2)
	ctx := context.Background()
	url := r.agent.URL()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "later", AgentURL: url, SkillID: "summarize",
		Posture: detector.Degrade, Idempotent: true, CardDigest: digest(t, cardV1)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit.Request(ctx, events.Request{TaskID: "later", AgentURL: url, Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypeDrift, 1)
	// The drift is the submission's (a client digest that is not the live
	// card): the request may still be handled, its fetch of v2 in flight,
	// and a pin on first fetch made now would share that fetch (v2).
	r.Drained(t, servicetest.WaitTimeout)

	// The agent serves v1 now; a task pinned on first fetch stores its body.
	r.agent.Set(cardV1)
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "stores-v1", AgentURL: url, SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 2)
	if d := r.Out().Events(events.TypePinned, "stores-v1")[0].Data.(events.Pinned).Digest; d != digest(t, cardV1) {
		t.Fatalf("stores-v1 pinned %s, want v1 (%s): the test's premise", d, digest(t, cardV1))
	}

	// Back on v2, a later transition of the first task is judged with the
	// body the worker now has: a second card.drift, with v1's findings
	// (its pinned still has no fingerprint: the pin was made without it).
	r.agent.Set(cardV2)
	if err := r.Emit.Status(ctx, events.Status{TaskID: "later", AgentURL: url, State: "input-required"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypeDrift, 2)

	rep, changes := reevaluate(t, r.reader(), replay.Reevaluation{}, 2)
	if len(changes) != 0 {
		t.Fatalf("re-evaluation as recorded changed %v (differences %+v), want none: each verdict re-judged on what the worker had", changes, rep.Differences)
	}
}
