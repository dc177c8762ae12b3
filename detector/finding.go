package detector

// Severity ranks a finding. The zero value is invalid.
type Severity int

// Severities from least to most serious; compare with < and >.
const (
	Info Severity = iota + 1
	Warning
	Breaking
)

// String returns "info", "warning" or "breaking".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Breaking:
		return "breaking"
	}
	return "invalid"
}

// ParseSeverity reads "info", "warning" or "breaking".
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "info":
		return Info, nil
	case "warning":
		return Warning, nil
	case "breaking":
		return Breaking, nil
	}
	return 0, &ValueError{Field: "severity", Value: s, Allowed: []string{"info", "warning", "breaking"}}
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

// Finding is one difference between a pinned and a live card, or one task-level
// observation (unmodeled-skill, artifact-type-undeclared, blind-retry).
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Path is a JSON pointer (RFC 6901) into the card the finding is about: the
	// live card for additions and changes, the pinned card for removals.
	Path    string `json:"path"`
	Before  any    `json:"before"`
	After   any    `json:"after"`
	Message string `json:"message"`

	// Skill is the skill id the finding concerns, "" for card-wide findings.
	// Verdicts use it to decide whether a finding touches a task.
	Skill string `json:"skill,omitempty"`
	// Scheme is the security scheme name the finding concerns, if any.
	Scheme string `json:"scheme,omitempty"`
	// Scope is the OAuth scope the finding concerns (oauth-scope-removed).
	Scope string `json:"scope,omitempty"`
	// Extension is the extension URI the finding concerns, if any.
	Extension string `json:"extension,omitempty"`

	// Touches reports that the finding affects the task it was evaluated for
	// (set by Evaluate and EvaluateUnknown; false from Diff, which knows no
	// task).
	Touches bool `json:"touches"`
}
