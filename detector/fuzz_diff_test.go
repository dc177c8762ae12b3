package detector

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
)

// FuzzDiff parses two inputs and diffs them. Diff must not panic, must be
// deterministic, must find nothing between a card and itself, must keep its
// own invariants (registered card-level rules, severities within the rule's,
// JSON pointers, messages, sorted output, marshalable values), and its
// mirrored rules must mirror when the cards swap places.
//
// The seed corpus in testdata/fuzz/FuzzDiff pairs the real cards of
// testdata/cards. Run: go test ./detector -run '^$' -fuzz FuzzDiff
func FuzzDiff(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, err := Parse(a)
		if err != nil {
			return
		}
		again, err := Parse(a)
		if err != nil {
			t.Fatalf("Parse(a) failed the second time: %v", err)
		}
		if self := Diff(pa, again); len(self) != 0 {
			t.Fatalf("Diff(a, a) =\n%s\nwant none", dump(self))
		}
		pb, err := Parse(b)
		if err != nil {
			return
		}
		got := Diff(pa, pb)
		if second := Diff(pa, pb); !reflect.DeepEqual(got, second) {
			t.Fatalf("Diff(a, b) is not deterministic:\n%s\nthen\n%s", dump(got), dump(second))
		}
		checkInvariants(t, got, a, b)
		back := Diff(pb, pa)
		checkInvariants(t, back, b, a)
		for _, m := range [][2]string{
			{RuleSkillAdded, RuleSkillRemoved},
			{RuleStreamingEnabled, RuleStreamingDisabled},
			{RulePushNotificationsEnabled, RulePushNotificationsDisabled},
			{RuleSecuritySchemeAdded, RuleSecuritySchemeRemoved},
		} {
			if x, y := count(got, m[0]), count(back, m[1]); x != y {
				t.Errorf("Diff(a, b) has %d %s but Diff(b, a) has %d %s", x, m[0], y, m[1])
			}
		}
	})
}

// checkInvariants checks findings between the cards served as pinned and
// live: registered rules, severities within the rule's, paths that resolve in
// one of the two served cards, messages, order.
func checkInvariants(t *testing.T, fs []Finding, pinned, live []byte) {
	t.Helper()
	pt, _ := jcs.Parse(pinned, jcs.Limits{})
	lt, _ := jcs.Parse(live, jcs.Limits{})
	for i, f := range fs {
		r, ok := RuleByID(f.Rule)
		if !ok || r.TaskLevel {
			t.Fatalf("finding of rule %q, want a registered card-level rule", f.Rule)
		}
		if f.Severity < Info || f.Severity > r.Severity {
			t.Fatalf("%s finding has severity %v, rule maximum %v", f.Rule, f.Severity, r.Severity)
		}
		if !resolves(&lt, f.Path) && !resolves(&pt, f.Path) || f.Message == "" {
			t.Fatalf("%s finding has path %q (resolving in neither card) and message %q", f.Rule, f.Path, f.Message)
		}
		if i > 0 {
			p := fs[i-1]
			if p.Severity < f.Severity || p.Severity == f.Severity && p.Rule > f.Rule ||
				p.Severity == f.Severity && p.Rule == f.Rule && p.Path > f.Path {
				t.Fatalf("findings out of order:\n%s", dump(fs))
			}
		}
	}
	if _, err := json.Marshal(fs); err != nil {
		t.Fatalf("json.Marshal(findings) = %v", err)
	}
}

func count(fs []Finding, rule string) int {
	n := 0
	for _, f := range fs {
		if f.Rule == rule {
			n++
		}
	}
	return n
}
