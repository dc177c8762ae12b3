package events_test

import (
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

// TestReplanSkillRoundTrip: a card.drift whose verdict re-plans a degrade
// task onto a renamed skill (verdict.replanSkill, since contract v1.2) keeps
// it through Encode and Decode in both modes, and its data validates; a
// verdict without one has no replanSkill member.
func TestReplanSkillRoundTrip(t *testing.T) {
	d := samples()[5].(events.Drift)
	d.Findings = []detector.Finding{{
		Rule: detector.RuleSkillRenamed, Severity: detector.Breaking, Path: "/skills/0/id",
		Before: "summarize", After: "summarize-v2", Message: "renamed", Skill: "summarize", Touches: true,
	}}
	d.Verdict = detector.Verdict{Action: detector.Replan, Posture: detector.Degrade, Reason: "renamed", ReplanSkill: "summarize-v2"}
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		m, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Time: time.Unix(0, 0), Data: d}, mode)
		if err != nil {
			t.Fatalf("%s: Encode: %v", mode, err)
		}
		got, err := events.Decode(events.NATSMsg(m))
		if err != nil {
			t.Fatalf("%s: Decode: %v", mode, err)
		}
		gd := got.Data.(events.Drift)
		if gd.Verdict.ReplanSkill != d.Verdict.ReplanSkill || gd.Verdict.Action != d.Verdict.Action {
			t.Errorf("%s: decoded verdict %+v, want %+v", mode, gd.Verdict, d.Verdict)
		}
		if err := schemas.Validate(events.TypeDrift, []byte(canonical(t, gd))); err != nil {
			t.Errorf("%s: decoded data does not validate: %v", mode, err)
		}
	}
	plain := samples()[5].(events.Drift)
	if s := canonical(t, plain); strings.Contains(s, "replanSkill") {
		t.Errorf("a verdict without a replan skill encodes one: %s", s)
	}
}
