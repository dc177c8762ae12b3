package detector_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
)

// A rule set built in code is held to what a file is: Validate refuses what
// ParseRuleSet refuses.
func TestRuleSetValidate(t *testing.T) {
	tests := []struct {
		name string
		rs   *detector.RuleSet
		rule string // offending rule id; "" valid
	}{
		{"nil is the registry", nil, ""},
		{"disable and re-grade", &detector.RuleSet{Disable: []string{detector.RuleSkillAdded},
			Severity: map[string]detector.Severity{detector.RuleInterfaceChanged: detector.Warning}}, ""},
		{"unknown disabled", &detector.RuleSet{Disable: []string{"no-such-rule"}}, "no-such-rule"},
		{"unknown re-graded", &detector.RuleSet{Severity: map[string]detector.Severity{"nope": detector.Info}}, "nope"},
		{"invalid severity", &detector.RuleSet{Severity: map[string]detector.Severity{detector.RuleSkillAdded: 7}}, detector.RuleSkillAdded},
		{"both", &detector.RuleSet{Disable: []string{detector.RuleSkillAdded},
			Severity: map[string]detector.Severity{detector.RuleSkillAdded: detector.Info}}, detector.RuleSkillAdded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rs.Validate()
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var re *detector.RuleSetError
			if !errors.As(err, &re) || !errors.Is(err, detector.ErrInvalidRuleSet) || re.Rule != tt.rule {
				t.Fatalf("Validate() = %v, want a *RuleSetError for %q", err, tt.rule)
			}
		})
	}
}

// Apply drops disabled rules, re-grades overridden ones, sorts as Diff does
// and leaves its input alone; a nil rule set only sorts.
func TestRuleSetApply(t *testing.T) {
	rs, err := detector.ParseRuleSet(strings.NewReader(`{"disable":["descriptive-text-changed"],"severity":{"interface-changed":"warning"}}`))
	if err != nil {
		t.Fatal(err)
	}
	in := []detector.Finding{
		{Rule: detector.RuleDescriptiveTextChanged, Severity: detector.Info, Path: "/description"},
		{Rule: detector.RuleInterfaceChanged, Severity: detector.Breaking, Path: "/supportedInterfaces/0"},
		{Rule: detector.RuleStreamingDisabled, Severity: detector.Breaking, Path: "/capabilities/streaming"},
	}
	orig := slices.Clone(in)
	summary := func(fs []detector.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Severity.String()+" "+f.Rule)
		}
		return out
	}
	if got, want := summary(rs.Apply(in)), []string{"breaking streaming-disabled", "warning interface-changed"}; !slices.Equal(got, want) {
		t.Errorf("Apply = %v, want %v", got, want)
	}
	if !slices.EqualFunc(in, orig, func(a, b detector.Finding) bool { return a.Rule == b.Rule && a.Severity == b.Severity }) {
		t.Errorf("Apply changed its input: %v", summary(in))
	}
	var none *detector.RuleSet
	if got, want := summary(none.Apply(in)), []string{"breaking interface-changed", "breaking streaming-disabled", "info descriptive-text-changed"}; !slices.Equal(got, want) {
		t.Errorf("nil Apply = %v, want %v", got, want)
	}
}
