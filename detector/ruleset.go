package detector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// RuleSet is a rule configuration beside the registry (in the manner of
// oasdiff's checker/config.go): the registry's rules with some disabled and
// some severities overridden. A nil *RuleSet is the registry as it is — what
// carddrift serve judges with. Every caller that judges a task (the worker,
// the re-evaluation of history, carddrift impact, the planner's Checker)
// takes this one type, through the task core, so that an override means the
// same thing everywhere.
//
// It is applied to a task's findings before Judge, so a disabled rule's
// findings never reach a verdict and an overridden severity decides whether
// a finding can abort a task (only breaking findings do) or matter at all
// (info findings never do).
//
// The file form (carddrift replay --reevaluate --rules FILE) is JSON:
//
//	{"disable": ["descriptive-text-changed"], "severity": {"interface-changed": "warning"}}
type RuleSet struct {
	// Disable lists rule ids whose findings are dropped, sorted.
	Disable []string `json:"disable,omitempty"`
	// Severity overrides the severity of every finding of a rule id.
	Severity map[string]Severity `json:"severity,omitempty"`
}

// ErrInvalidRuleSet is returned (wrapped, inside a *RuleSetError) by
// ParseRuleSet and RuleSet.Validate for a rule set that is not the expected
// JSON, names a rule id the registry does not know or a severity that does
// not exist.
var ErrInvalidRuleSet = errors.New("invalid rules")

// RuleSetError is the error ParseRuleSet and Validate return. Rule is the
// offending rule id ("" when the file itself is malformed).
type RuleSetError struct {
	Rule   string
	Reason string
}

func (e *RuleSetError) Error() string {
	if e.Rule == "" {
		return fmt.Sprintf("invalid rules: %s", e.Reason)
	}
	return fmt.Sprintf("invalid rules: %q: %s", e.Rule, e.Reason)
}

// Unwrap returns ErrInvalidRuleSet.
func (e *RuleSetError) Unwrap() error { return ErrInvalidRuleSet }

// ParseRuleSet reads a rule set file. Every rule id must be one of the
// registry's (RuleByID), every severity "info", "warning" or "breaking";
// unknown fields, a rule both disabled and overridden, and trailing data are
// errors. Errors are *RuleSetError (errors.Is ErrInvalidRuleSet).
func ParseRuleSet(r io.Reader) (*RuleSet, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &RuleSetError{Reason: err.Error()}
	}
	var file struct {
		Disable  []string          `json:"disable"`
		Severity map[string]string `json:"severity"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, &RuleSetError{Reason: "want {\"disable\":[rule ids], \"severity\":{rule id: severity}}: " + err.Error()}
	}
	if dec.More() {
		return nil, &RuleSetError{Reason: "trailing data after the JSON object"}
	}
	rs := &RuleSet{Disable: slices.Compact(slices.Sorted(slices.Values(file.Disable)))}
	for id, sev := range file.Severity {
		s, err := ParseSeverity(sev)
		if err != nil {
			return nil, &RuleSetError{Rule: id, Reason: fmt.Sprintf("severity %q: want info, warning or breaking", sev)}
		}
		if rs.Severity == nil {
			rs.Severity = map[string]Severity{}
		}
		rs.Severity[id] = s
	}
	if err := rs.Validate(); err != nil {
		return nil, err
	}
	return rs, nil
}

// Validate checks a rule set built in code as ParseRuleSet checks a file:
// known rule ids, valid severities, no rule both disabled and overridden. A
// nil RuleSet is valid.
func (r *RuleSet) Validate() error {
	if r == nil {
		return nil
	}
	for _, id := range r.Disable {
		if _, ok := RuleByID(id); !ok {
			return &RuleSetError{Rule: id, Reason: "not a rule id (disable)"}
		}
	}
	for id, s := range r.Severity {
		if _, ok := RuleByID(id); !ok {
			return &RuleSetError{Rule: id, Reason: "not a rule id (severity)"}
		}
		if s.String() == "invalid" {
			return &RuleSetError{Rule: id, Reason: fmt.Sprintf("severity %d: want info, warning or breaking", s)}
		}
		if slices.Contains(r.Disable, id) {
			return &RuleSetError{Rule: id, Reason: "both disabled and given a severity"}
		}
	}
	return nil
}

// Apply returns the findings with disabled rules dropped and severities
// overridden, in Diff's order (SortFindings). It does not modify fs. A nil
// RuleSet returns a sorted copy of fs.
func (r *RuleSet) Apply(fs []Finding) []Finding {
	out := make([]Finding, 0, len(fs))
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
	SortFindings(out)
	return out
}
