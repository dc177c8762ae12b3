package a2aemit

import (
	"context"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/carddrift/carddrift/events/client/internal/track"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Well-known card paths, current first.
const (
	WellKnownPath       = fetcher.WellKnownPath
	LegacyWellKnownPath = fetcher.LegacyWellKnownPath
)

// MaxCardBytes bounds a card body ResolveCard reads (the fetcher's).
const MaxCardBytes = fetcher.DefaultMaxBodyBytes

// ResolvedCard is what ResolveCard found: the a2a-go struct to build the
// client from, the body as served (pass Raw as Options.RawCard) and the
// URL that served it (Options.CardURL).
type ResolvedCard = track.ResolvedCard[a2a.AgentCard]

// ErrCardStatus is wrapped by ResolveCard when no card URL answered 2xx
// (the error also matches fetcher.ReasonStatus and holds a *fetcher.FetchError).
var ErrCardStatus = track.ErrCardStatus

// ResolveCard fetches the public card of the agent at agentURL through f as
// the workers do (fetcher.Fetcher.FetchAgent: WellKnownPath, then
// LegacyWellKnownPath on 404, 405 or 410; f's SSRF guard, whose Allow is
// the caller's to widen). A nil f is a default Fetcher (refusing loopback
// and private addresses) made for this call. A failed fetch's error holds
// the *fetcher.FetchError; a body that does not decode is an error too.
func ResolveCard(ctx context.Context, f *fetcher.Fetcher, agentURL string) (*ResolvedCard, error) {
	return track.Resolve[a2a.AgentCard](ctx, f, agentURL, "a2aemit")
}
