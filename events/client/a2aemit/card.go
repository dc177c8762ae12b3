package a2aemit

import (
	"context"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/carddrift/carddrift/events/client/internal/track"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Well-known card paths, current first: the fetcher's, which carddrift's
// workers and the a2a-go resolver use.
const (
	WellKnownPath       = fetcher.WellKnownPath
	LegacyWellKnownPath = fetcher.LegacyWellKnownPath
)

// MaxCardBytes bounds a card body ResolveCard reads (the fetcher's limit,
// Options.MaxBodyBytes).
const MaxCardBytes = fetcher.DefaultMaxBodyBytes

// ResolvedCard is what ResolveCard found: the a2a-go struct to build the
// client from (AgentCard), and the body as served, which the struct cannot
// reproduce (Raw: pass it as Options.RawCard), with the URL that served it
// (URL: pass it as Options.CardURL). It is not a card model (that is
// detector.Card, which carddrift judges): it is the SDK's view of a card
// paired with the bytes carddrift needs in every a2a.task.submitted.
type ResolvedCard = track.ResolvedCard[a2a.AgentCard]

// ErrCardStatus is wrapped by ResolveCard when no card URL answered with a
// 2xx status (the error also matches fetcher.ReasonStatus and is a
// *fetcher.FetchError holding the status).
var ErrCardStatus = track.ErrCardStatus

// ResolveCard fetches the public card of the agent at agentURL through f, as
// carddrift's workers fetch it (fetcher.Fetcher.FetchAgent): agentURL +
// WellKnownPath, falling back to LegacyWellKnownPath on 404, 405 or 410, with
// the workers' headers (A2A-Version and all), timeouts, size limit and SSRF
// guard. The guard is the caller's to set: f's Options.Allow (an agent on
// loopback or a private network needs it widened). A nil f is a Fetcher with
// the default Options, whose guard refuses loopback and private addresses;
// it is made and closed for this call.
//
// It returns the parsed struct and the raw bytes. The error of a failed
// fetch holds the *fetcher.FetchError (errors.As; errors.Is matches its
// reason's sentinel, and ErrCardStatus for a status other than 2xx); a body
// that does not decode into a2a.AgentCard is an error too.
func ResolveCard(ctx context.Context, f *fetcher.Fetcher, agentURL string) (*ResolvedCard, error) {
	return track.Resolve[a2a.AgentCard](ctx, f, agentURL, "a2aemit")
}
