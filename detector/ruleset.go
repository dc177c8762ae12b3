package detector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// RuleSet is the registry's rules with some disabled and some severities
// overridden; nil is the registry as it is. Every caller that judges a task
// takes this one type, applied to the findings before Judge. The file form
// (carddrift replay --reevaluate --rules FILE) is JSON:
//
//	{"disable": ["descriptive-text-changed"], "severity": {"interface-changed": "warning"}}
type RuleSet struct {
	Disable  []string            `json:"disable,omitempty"` // sorted
	Severity map[string]Severity `json:"severity,omitempty"`
}

// ErrInvalidRuleSet is what every *RuleSetError wraps.
var ErrInvalidRuleSet = errors.New("invalid rules")

// RuleSetError is the error of ParseRuleSet and Validate; Rule is "" when
// the file itself is malformed.
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

func (e *RuleSetError) Unwrap() error { return ErrInvalidRuleSet }

// ParseRuleSet reads a rule set file, checked as Validate checks; unknown
// fields and trailing data are errors too. Errors are *RuleSetError.
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

// Validate checks for known rule ids, valid severities and no rule both
// disabled and overridden. A nil RuleSet is valid.
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

// Apply returns a sorted copy of fs with disabled rules dropped and
// severities overridden.
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
