package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/carddrift/carddrift/detector"
)

// Rules is a rule set for re-evaluation: the detector's rules with some
// disabled and some severities overridden. It is applied to the findings
// before detector.Judge, so a disabled rule's findings never reach a verdict
// and an overridden severity decides whether a finding can abort a task (only
// breaking findings do) or matter at all (info findings never do).
//
// The file form is JSON:
//
//	{"disable": ["descriptive-text-changed"], "severity": {"interface-changed": "warning"}}
type Rules struct {
	// Disable lists rule ids whose findings are dropped, sorted.
	Disable []string `json:"disable,omitempty"`
	// Severity overrides the severity of every finding of a rule id.
	Severity map[string]detector.Severity `json:"severity,omitempty"`
}

// ParseRules reads a rules file. Every rule id must be one of detector.Rules
// (detector.RuleByID), every severity "info", "warning" or "breaking";
// unknown fields, a rule both disabled and overridden, and trailing data are
// errors. Errors are *RulesError (errors.Is ErrInvalidRules).
func ParseRules(r io.Reader) (*Rules, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &RulesError{Reason: err.Error()}
	}
	var file struct {
		Disable  []string          `json:"disable"`
		Severity map[string]string `json:"severity"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, &RulesError{Reason: "want {\"disable\":[rule ids], \"severity\":{rule id: severity}}: " + err.Error()}
	}
	if dec.More() {
		return nil, &RulesError{Reason: "trailing data after the JSON object"}
	}
	rules := &Rules{}
	for _, id := range file.Disable {
		if _, ok := detector.RuleByID(id); !ok {
			return nil, &RulesError{Rule: id, Reason: "not a rule id (disable)"}
		}
		rules.Disable = append(rules.Disable, id)
	}
	slices.Sort(rules.Disable)
	rules.Disable = slices.Compact(rules.Disable)
	for id, sev := range file.Severity {
		if _, ok := detector.RuleByID(id); !ok {
			return nil, &RulesError{Rule: id, Reason: "not a rule id (severity)"}
		}
		s, err := detector.ParseSeverity(sev)
		if err != nil {
			return nil, &RulesError{Rule: id, Reason: fmt.Sprintf("severity %q: want info, warning or breaking", sev)}
		}
		if slices.Contains(rules.Disable, id) {
			return nil, &RulesError{Rule: id, Reason: "both disabled and given a severity"}
		}
		if rules.Severity == nil {
			rules.Severity = map[string]detector.Severity{}
		}
		rules.Severity[id] = s
	}
	return rules, nil
}

// Apply returns the findings with disabled rules dropped and severities
// overridden, in detector.Diff's order (detector.SortFindings). It does not
// modify fs. A nil Rules returns a sorted copy of fs.
func (r *Rules) Apply(fs []detector.Finding) []detector.Finding {
	out := make([]detector.Finding, 0, len(fs))
	for _, f := range fs {
		if r != nil {
			if slices.Contains(r.Disable, f.Rule) {
				continue
			}
			if s, ok := r.Severity[f.Rule]; ok {
				f.Severity = s
			}
		}
		out = append(out, f)
	}
	detector.SortFindings(out)
	return out
}
