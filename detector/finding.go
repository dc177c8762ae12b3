package detector

import "slices"

// Severity ranks a finding. The zero value is invalid.
type Severity int

// Severities from least to most serious; compare with < and >.
const (
	Info Severity = iota + 1
	Warning
	Breaking
)

var severityNames = []string{Info: "info", Warning: "warning", Breaking: "breaking"}

// String returns "info", "warning" or "breaking".
func (s Severity) String() string {
	if s < Info || s > Breaking {
		return "invalid"
	}
	return severityNames[s]
}

// ParseSeverity reads "info", "warning" or "breaking".
func ParseSeverity(s string) (Severity, error) {
	if i := slices.Index(severityNames, s); i >= int(Info) {
		return Severity(i), nil
	}
	return 0, &ValueError{Field: "severity", Value: s, Allowed: slices.Clone(severityNames[Info:])}
}

// MarshalText encodes the severity as its name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// newFinding is a finding whose message is that of rule+variant (variant ""
// or "/name") rendered with kv.
func newFinding(rule, variant string, sev Severity, path string, before, after any, kv ...string) Finding {
	return Finding{Rule: rule, Severity: sev, Path: path, Before: before, After: after, Message: render(rule+variant, kv...)}
}

// Finding is one difference between a pinned and a live card, or one
// task-level observation.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Path is a JSON pointer into the live card, or the pinned card for
	// removals.
	Path    string `json:"path"`
	Before  any    `json:"before"`
	After   any    `json:"after"`
	Message string `json:"message"`

	// What the finding concerns, for Touches: "" when card-wide.
	Skill     string `json:"skill,omitempty"`
	Scheme    string `json:"scheme,omitempty"`
	Scope     string `json:"scope,omitempty"`
	Extension string `json:"extension,omitempty"`

	// Touches reports that the finding affects the task it was evaluated for
	// (false from Diff, which knows no task).
	Touches bool `json:"touches"`
}
