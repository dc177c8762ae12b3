package planner_test

import (
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/natstest"
)

// renamedEcho is v1 with skill echo offered as echo-v2 (the same modes, tags
// and security requirements).
var renamedEcho = cardSpec{Streaming: true, Skills: []skillSpec{{ID: "echo-v2"}, {ID: "translate"}}}

// TestCheckRenamedSkill: the Checker tells a degrade, idempotent task whose
// skill was renamed to re-plan onto the new id; a fail-closed one aborts
// and is told no skill to move to.
func TestCheckRenamedSkill(t *testing.T) {
	a := servicetest.NewAgent(t, renamedEcho.String())
	c := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch()})
	degrade := detector.Requirements{SkillID: "echo", Posture: detector.Degrade, Idempotent: true}

	d := check(t, c, degrade, a.URL(), planner.WithPinned(v1.JSON()))
	if d.Verdict == nil || d.Verdict.Action != detector.Replan || d.Verdict.ReplanSkill != "echo-v2" {
		t.Fatalf("verdict = %+v, want replan onto echo-v2", d.Verdict)
	}
	if !hasRule(d.Findings, detector.RuleSkillRenamed) || hasRule(d.Findings, detector.RuleSkillRemoved) {
		t.Errorf("findings = %+v, want skill-renamed and no skill-removed", d.Findings)
	}
	if !slices.Equal(kinds(d.Unmet), []detector.UnmetKind{detector.UnmetSkill}) {
		t.Errorf("unmet = %v, want the old id gone", d.Unmet)
	}

	d = check(t, c, degrade, a.URL(), planner.WithPinned(v1.JSON()), planner.WithPosture(detector.FailClosed))
	if d.Verdict.Action != detector.Abort || d.Verdict.ReplanSkill != "" {
		t.Errorf("fail-closed verdict = %+v, want abort without a replan skill", d.Verdict)
	}
}

// TestSubscribeReplanSkill: Subscribe hands the planner the card.drift's
// replanSkill.
func TestSubscribeReplanSkill(t *testing.T) {
	js, _ := withJS(t)
	rec := &recorder{}
	subscribe(t, js, planner.Options{Durable: "replan"}, rec.handle)
	degrade := detector.Requirements{SkillID: "echo", Posture: detector.Degrade, Idempotent: true}
	publish(t, js, drift(t, "task-1", "https://a.example", v1, renamedEcho, degrade),
		drift(t, "task-2", "https://a.example", v1, noStream, streamEcho))
	natstest.Eventually(t, 10*time.Second, "verdicts", func() bool { return rec.len() == 2 })
	for _, v := range rec.got {
		want := ""
		if v.TaskID == "task-1" {
			want = "echo-v2"
		}
		if v.ReplanSkill != want {
			t.Errorf("%s: ReplanSkill = %q (%s: %s), want %q", v.TaskID, v.ReplanSkill, v.Action, v.Reason, want)
		}
	}
}
