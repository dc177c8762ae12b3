package task

import (
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// While an agent's replicas disagree, card.drift carries replicas-disagree
// (a warning: the action is what the cards alone decide); the pinned card
// seen again publishes nothing, split brain or not.
func TestReplicasDisagreeRidesWithDrift(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	req := detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}
	split := func(o Observation) Observation {
		o.Disagreeing, o.Window = []string{a.digest, b.digest}, 2*time.Minute
		return o
	}
	for _, tc := range []struct {
		name   string
		obs    Observation
		rules  []string // nil: no card.drift
		action detector.Action
	}{
		{"other card, one replica", b.obs(t0.Add(time.Second)), []string{detector.RuleStreamingDisabled}, detector.Abort},
		{"other card, replicas disagree", split(b.obs(t0.Add(time.Second))), []string{detector.RuleReplicasDisagree, detector.RuleStreamingDisabled}, detector.Abort},
		{"pinned card, replicas disagree", split(a.obs(t0.Add(time.Second))), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Begin(request("message/stream", 1), Meta{Seq: 2, Time: t0, Now: t0}, pinOn(a, req), a.c)
			r := tr.Judge(tc.obs)
			ds := drifts(r)
			if tc.rules == nil {
				if len(ds) != 0 {
					t.Fatalf("Judge published %v, want nothing", rules(ds[0]))
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("Judge published %d card.drift, want 1", len(ds))
			}
			got := rules(ds[0])
			for _, want := range tc.rules {
				if !slices.Contains(got, want) {
					t.Errorf("rules = %v, want %v among them", got, want)
				}
			}
			if ds[0].Verdict.Action != tc.action {
				t.Errorf("action = %s, want %s", ds[0].Verdict.Action, tc.action)
			}
		})
	}
}

// Assess is Judge without the bookkeeping: the same findings and verdict,
// even for a drift the pin already reported, and nothing for a pending pin
// or the pinned card.
func TestAssessIsJudge(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	for _, req := range []detector.Requirements{
		{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed},
		{SkillID: "summarize", Streaming: true, Posture: detector.Degrade, Idempotent: true},
		{SkillID: "summarize", Posture: detector.FailClosed},
	} {
		pin := pinOn(a, req)
		r := Begin(request("message/stream", 1), Meta{Seq: 2, Time: t0, Now: t0}, pin, a.c).Judge(b.obs(t0.Add(time.Second)))
		ds := drifts(r)
		fs, v, ok := Assess(pin, a.c, b.obs(t0.Add(time.Second)), Meta{Now: t0})
		if !ok || len(ds) != 1 || v.Action != ds[0].Verdict.Action || v.Reason != ds[0].Verdict.Reason || !slices.Equal(rules(ds[0]), rulesOf(fs)) {
			t.Errorf("%+v: Assess = %v %v %v, Judge published %+v", req, rulesOf(fs), v, ok, ds)
		}
		// Reported already: Judge publishes nothing, Assess still says.
		if _, v2, ok := Assess(*r.Pin, a.c, b.obs(t0.Add(time.Second)), Meta{Now: t0}); !ok || v2.Action != v.Action {
			t.Errorf("Assess after the drift was reported = %v %v", v2, ok)
		}
	}
	if _, _, ok := Assess(pinOn(a, detector.Requirements{}), a.c, a.obs(t0), Meta{Now: t0}); ok {
		t.Errorf("Assess of the pinned card = drift")
	}
	if _, _, ok := Assess(Pin{TaskID: "t1"}, nil, b.obs(t0), Meta{Now: t0}); ok {
		t.Errorf("Assess of a pending pin = drift")
	}
}

func rulesOf(fs []detector.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}
