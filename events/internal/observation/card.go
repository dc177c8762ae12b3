package observation

import (
	"context"
	"errors"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Card observes through f the live card the task whose pin is pin is judged
// against (contract v1.2, "Authenticated extended cards"): the public card,
// and for a task that uses the extended card (task.Pin.UsesExtended) the
// extended card the public card says how to ask for, with the credentials f
// holds for the agent's origin. state is the observation's extended-card
// state, for task.Transition.UseExtended and task.Pin.LostExtended:
// events.ExtendedPinned when the observation is the extended card,
// events.ExtendedUnavailable when the task uses the extended card and none
// can be asked for (no credentials, none offered: the public card is
// returned and judges the task; err is nil), "" for a task that does not
// use it. An extended card that is unreachable (401, 403, a JSON-RPC
// error, …) is the error, as a public card's would be; the fetcher's
// errors never carry a credential.
//
// The worker and the planner's Checker both observe through it, so that a
// check sees the card a transition is judged on.
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
