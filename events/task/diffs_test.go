package task

import (
	"reflect"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
)

// A memo of diffs never changes a decision: Decide with Policy.Diffs (a
// miss, then hits) is Decide without it, under every policy, with and
// without task findings — and what one decision does to its findings does
// not reach the next.
func TestDecideWithDiffMemo(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	soften, err := detector.ParseRuleSet(strings.NewReader(`{"severity":{"streaming-disabled":"warning"}}`))
	if err != nil {
		t.Fatal(err)
	}
	memo := detector.NewDiffMemo(1 << 20)
	task := []detector.Finding{{Rule: detector.RuleBlindRetry, Severity: detector.Warning, Message: "retried"}}
	for _, req := range []detector.Requirements{
		{SkillID: "summarize", Streaming: true, Idempotent: true},
		{SkillID: "summarize"},
	} {
		pin := Pin{TaskID: "t", Digest: a.digest, Requirements: req}
		for _, p := range []Policy{{}, {Posture: detector.Degrade}, {Rules: soften}} {
			for _, tf := range [][]detector.Finding{nil, task} {
				want := Decide(pin, a.c, b.obs(t0), tf, p)
				p.Diffs = memo
				for call := range 3 {
					got := Decide(pin, a.c, b.obs(t0), tf, p)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("req %+v policy %+v call %d: with the memo %+v, want %+v", req, p, call, got, want)
					}
					for i := range got.Findings { // a caller's changes stay its own
						got.Findings[i].Touches = !got.Findings[i].Touches
						got.Findings[i].Message = "changed"
					}
				}
				p.Diffs = nil
			}
		}
	}
	if memo.Len() != 1 {
		t.Errorf("memo holds %d pairs, want the one", memo.Len())
	}
}
