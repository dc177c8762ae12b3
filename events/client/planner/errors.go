package planner

import (
	"errors"
	"fmt"

	"github.com/carddrift/carddrift/store/fetcher"
)

// Conditions returned by this package. Test with errors.Is.
var (
	// ErrInvalidOptions is returned (wrapped) by Subscribe for Options it
	// cannot use (no Durable, a bad Agent URL, an unknown action or
	// severity), and by NewChecker for CheckerOptions it cannot use.
	ErrInvalidOptions = errors.New("planner: invalid options")

	// ErrUnreachable is matched by the *UnreachableError Check returns when
	// the live card could not be read: transport failure, timeout, non-2xx
	// status, a body that is not a parseable card, an address refused by the
	// SSRF guard. It is never a "satisfied" answer: a planner that cannot see
	// the card does not know whether the task can run.
	ErrUnreachable = errors.New("planner: live card unreachable")

	// ErrInvalidPinned is returned (wrapped, with the detector's parse error)
	// by Check when the pinned card given with WithPinned does not parse as a
	// card.
	ErrInvalidPinned = errors.New("planner: pinned card does not parse")

	// ErrUnknownPinned is returned (wrapped) by Check when WithPinnedDigest
	// names a digest whose body is not in CheckerOptions.Cards (or no Cards
	// store was given): without the body there is nothing to diff.
	ErrUnknownPinned = errors.New("planner: pinned card body unknown")

	// ErrStore is returned (wrapped) by Check when the Cards store failed
	// while resolving a pinned digest, or when the fetcher's lease or card
	// store failed (it then also matches fetcher.ErrStore). Transient: try
	// again later.
	ErrStore = errors.New("planner: store failed")
)

// UnreachableError is returned by Check when the live card could not be read.
// It matches ErrUnreachable and, through Err, the fetcher's sentinel of its
// Reason (fetcher.ErrTimeout, fetcher.ErrRefusedAddress, ...).
type UnreachableError struct {
	// AgentURL is the agent asked about; CardURL the card URL that failed
	// (the first one tried when both well-known paths failed).
	AgentURL, CardURL string
	// Reason is the fetcher's typed reason, the same string a worker puts in
	// card.unreachable.
	Reason fetcher.Reason
	// Status is the HTTP status when one was received, else 0.
	Status int
	// Err is the underlying error (a *fetcher.FetchError).
	Err error
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
