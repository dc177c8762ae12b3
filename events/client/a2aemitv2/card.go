package a2aemitv2

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/carddrift/carddrift/events/client/internal/track"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Well-known card paths, current first: the fetcher's, which carddrift's
// workers and the a2a-go/v2 resolver use.
const (
	WellKnownPath       = fetcher.WellKnownPath
	LegacyWellKnownPath = fetcher.LegacyWellKnownPath
)

// ResolvedCard is what ResolveCard found: the a2a-go/v2 struct to build the
// client from (AgentCard), and the body as served, which the struct cannot
// reproduce (Raw: pass it as Options.RawCard), with the URL that served it
// (URL: pass it as Options.CardURL).
type ResolvedCard = track.ResolvedCard[a2a.AgentCard]

// ErrCardStatus is wrapped by ResolveCard when no card URL answered with a
// 2xx status (the error also matches fetcher.ReasonStatus and is a
// *fetcher.FetchError holding the status). It is package a2aemit's too.
var ErrCardStatus = track.ErrCardStatus

// ResolveCard fetches the public card of the agent at agentURL through f, as
// carddrift's workers fetch it (fetcher.Fetcher.FetchAgent: WellKnownPath,
// LegacyWellKnownPath on 404, 405 or 410, the workers' headers, timeouts,
// size limit and SSRF guard, whose Allow is the caller's to set). A nil f is
// a Fetcher with the default Options (refusing loopback and private
// addresses), made and closed for this call.
//
// It returns the struct decoded as the SDK's default card parser decodes
// (the v1.0 shape) and the raw bytes. The error of a failed fetch holds the
// *fetcher.FetchError (errors.As; errors.Is matches its reason's sentinel,
// and ErrCardStatus for a status other than 2xx); a body that does not
// decode into a2a.AgentCard is an error too.
func ResolveCard(ctx context.Context, f *fetcher.Fetcher, agentURL string) (*ResolvedCard, error) {
	return track.Resolve[a2a.AgentCard](ctx, f, agentURL, "a2aemitv2")
}
