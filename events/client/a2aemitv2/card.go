package a2aemitv2

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/carddrift/carddrift/events/client/internal/track"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Well-known card paths, current first.
const (
	WellKnownPath       = fetcher.WellKnownPath
	LegacyWellKnownPath = fetcher.LegacyWellKnownPath
)

// ResolvedCard is a2aemit.ResolvedCard for the a2a-go/v2 struct.
type ResolvedCard = track.ResolvedCard[a2a.AgentCard]

// ErrCardStatus is a2aemit.ErrCardStatus.
var ErrCardStatus = track.ErrCardStatus

// ResolveCard is a2aemit.ResolveCard, decoding the v1.0 card shape as the
// SDK's default card parser does.
func ResolveCard(ctx context.Context, f *fetcher.Fetcher, agentURL string) (*ResolvedCard, error) {
	return track.Resolve[a2a.AgentCard](ctx, f, agentURL, "a2aemitv2")
}
