package fleet

import "errors"

// Sentinel errors. Test with errors.Is; returned errors may wrap them with
// the agent or scenario concerned.
var (
	// ErrNotStarted is returned by Schedule and Play when an agent has no
	// address yet (Fleet.Start has not run), and by Agent methods that need
	// its server.
	ErrNotStarted = errors.New("fleet: not started")
	// ErrStarted is returned by Fleet.Start when called a second time.
	ErrStarted = errors.New("fleet: already started")
	// ErrClosed is returned by Fleet.Start and Agent.SetOutage once the fleet
	// has been closed.
	ErrClosed = errors.New("fleet: closed")
	// ErrUnknownScenario is returned by Schedule for a name that is not in
	// Scenarios.
	ErrUnknownScenario = errors.New("fleet: unknown scenario")
	// ErrInvalidOptions is returned by New for options out of range.
	ErrInvalidOptions = errors.New("fleet: invalid options")
	// ErrUnknownLabel is returned by Play for a step that names a card the
	// assignment does not hold.
	ErrUnknownLabel = errors.New("fleet: unknown card label")
)
