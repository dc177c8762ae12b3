package observation

import (
	"context"
	"errors"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Card observes through f the live card pin's task is judged against: the
// public card or, for a task on the extended card, the extended card with
// f's credentials. state is events.ExtendedPinned for the extended card,
// events.ExtendedUnavailable when none can be asked for (the public card is
// returned, err nil), "" for other tasks. An unreachable extended card is
// the error, as a public card's would be; errors never carry a credential.
func Card(ctx context.Context, f *fetcher.Fetcher, pin task.Pin, force bool) (obs fetcher.Observation, state string, err error) {
	pub, err := f.ObserveAgent(ctx, pin.AgentURL, pin.CardURL, force)
	if !pin.UsesExtended() {
		if pin.Requirements.ExtendedCard {
			state = events.ExtendedUnavailable
		}
		return pub, state, err
	}
	if err != nil {
		return pub, events.ExtendedPinned, err
	}
	ext, err := f.ObserveExtended(ctx, pub, force)
	if errors.Is(err, fetcher.ErrExtendedUnavailable) {
		return pub, events.ExtendedUnavailable, nil
	}
	return ext, events.ExtendedPinned, err
}
