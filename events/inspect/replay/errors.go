package replay

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidQuery is returned (wrapped) by the Reader's methods and by
	// ParseTime for a query they cannot run: an agent URL that is not an
	// http(s) URL with a host, Until before Since, or an unreadable time.
	ErrInvalidQuery = errors.New("replay: invalid query")
	// ErrInvalidRules is returned (wrapped, inside a *RulesError) by
	// ParseRules for a rules file that is not the expected JSON, names a rule
	// id the detector does not know or a severity that does not exist.
	ErrInvalidRules = errors.New("replay: invalid rules")
	// ErrStalled is returned (wrapped) when a stream stops delivering before
	// the read reached the stream's last sequence at its start, for longer
	// than Options.IdleTimeout (for example when the server is unreachable).
	ErrStalled = errors.New("replay: stream stopped delivering")
)

// RulesError is the error ParseRules returns. Rule is the offending rule id
// ("" when the file itself is malformed).
type RulesError struct {
	Rule   string
	Reason string
}

func (e *RulesError) Error() string {
	if e.Rule == "" {
		return fmt.Sprintf("replay: invalid rules: %s", e.Reason)
	}
	return fmt.Sprintf("replay: invalid rules: %q: %s", e.Rule, e.Reason)
}

// Unwrap returns ErrInvalidRules.
func (e *RulesError) Unwrap() error { return ErrInvalidRules }
