package task

import (
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
)

// Decide's Policy: a posture that replaces the task's own, and a rule set
// applied before the verdict — what replay --reevaluate and the planner's
// WithPosture hand in; the zero Policy is the worker's default.
func TestDecidePolicy(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	pin := Pin{TaskID: "t", Digest: a.digest, Requirements: detector.Requirements{SkillID: "summarize", Streaming: true, Idempotent: true}}
	obs := b.obs(t0)
	soften, err := detector.ParseRuleSet(strings.NewReader(`{"severity":{"streaming-disabled":"warning"}}`))
	if err != nil {
		t.Fatal(err)
	}
	drop, err := detector.ParseRuleSet(strings.NewReader(`{"disable":["streaming-disabled"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		p      Policy
		action detector.Action
		kept   bool // streaming-disabled among the findings
	}{
		{"the task's posture (fail-closed)", Policy{}, detector.Abort, true},
		{"posture replaced", Policy{Posture: detector.Degrade}, detector.Replan, true},
		{"re-graded to a warning", Policy{Rules: soften}, detector.Continue, true},
		{"disabled", Policy{Rules: drop}, detector.Continue, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(pin, a.c, obs, nil, tt.p)
			if d.Verdict.Action != tt.action || !d.Drift() {
				t.Fatalf("Decide = %s (%s), drift %t; want %s, a drift",
					d.Verdict.Action, d.Verdict.Reason, d.Drift(), tt.action)
			}
			if kept := slices.Contains(detector.RuleIDs(d.Findings), detector.RuleStreamingDisabled); kept != tt.kept {
				t.Errorf("findings %v: streaming-disabled kept %t, want %t", detector.RuleIDs(d.Findings), kept, tt.kept)
			}
		})
	}
	// The pinned card itself, unsigned, with nothing else to judge: not
	// compared, and the verdict is continue.
	if d := Decide(pin, a.c, a.obs(t0), nil, Policy{}); d.Compared || d.Verdict.Action != detector.Continue || len(d.Findings) != 0 {
		t.Errorf("Decide(pinned card) = %+v, want not compared, continue", d)
	}
}
