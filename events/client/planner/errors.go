package planner

import (
	"errors"
	"fmt"

	"github.com/carddrift/carddrift/store/fetcher"
)

// Conditions returned by this package. Test with errors.Is.
var (
	// ErrInvalidOptions is returned (wrapped) by Subscribe and NewChecker
	// for options they cannot use.
	ErrInvalidOptions = errors.New("planner: invalid options")
	// ErrUnreachable is matched by the *UnreachableError Check returns when
	// the live card could not be read.
	ErrUnreachable = errors.New("planner: live card unreachable")
	// ErrInvalidPinned is returned (wrapped) by Check when the pinned card
	// does not parse.
	ErrInvalidPinned = errors.New("planner: pinned card does not parse")
	// ErrUnknownPinned is returned (wrapped) by Check when WithPinnedDigest
	// names a digest whose body is not in CheckerOptions.Cards.
	ErrUnknownPinned = errors.New("planner: pinned card body unknown")
	// ErrStore is returned (wrapped) by Check when a store failed (with
	// fetcher.ErrStore when the fetcher's did). Transient.
	ErrStore = errors.New("planner: store failed")
)

// UnreachableError is returned by Check when the live card could not be read.
// It matches ErrUnreachable and, through Err, the fetcher's sentinels.
type UnreachableError struct {
	AgentURL, CardURL string         // CardURL: the (first) URL that failed
	Reason            fetcher.Reason // as a worker's card.unreachable
	Status            int            // the HTTP status, if one was received
	Err               error          // a *fetcher.FetchError
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("planner: card of %s unreachable (%s)", e.AgentURL, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrUnreachable and the underlying error.
func (e *UnreachableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnreachable}
	}
	return []error{ErrUnreachable, e.Err}
}
