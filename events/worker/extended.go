package worker

import (
	"cmp"
	"context"
	"errors"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

// observeCard observes the live card a task is judged against (contract
// v1.2, "Authenticated extended cards"): the public card, and for a task
// that uses the extended card (task.Pin.UsesExtended) the extended card the
// public card says how to ask for, with the credentials held for the
// agent's origin. state is the task's extended-card state for its pin:
// events.ExtendedPinned when the observation is the extended card,
// events.ExtendedUnavailable when the task uses the extended card and none
// can be asked for (no credentials, none offered: the public card is
// returned and judges the task), "" for a task that does not use it. An
// extended card that is unreachable (401, 403, a JSON-RPC error, …) is the
// error, as a public card's would be.
func (w *Worker) observeCard(ctx context.Context, pin task.Pin, force bool) (obs fetcher.Observation, state string, err error) {
	pub, err := w.fetch.ObserveAgent(ctx, pin.AgentURL, pin.CardURL, force)
	if !pin.UsesExtended() {
		if pin.Requirements.ExtendedCard {
			state = events.ExtendedUnavailable
		}
		return pub, state, err
	}
	if err != nil {
		return pub, events.ExtendedPinned, err
	}
	ext, err := w.fetch.ObserveExtended(ctx, pub, force)
	if errors.Is(err, fetcher.ErrExtendedUnavailable) {
		w.log.Debug().Str("task", pin.TaskID).Str("agent", pin.AgentURL).Err(err).Msg("no extended card: judged on the public card")
		return pub, events.ExtendedUnavailable, nil
	}
	return ext, events.ExtendedPinned, err
}

// clientExtended is the extended-card state of a pin made from the card the
// client submitted: the client's card is its extended card when carddrift
// can ask the agent for one (it holds credentials for its origin), else the
// task is judged on the public card.
func (w *Worker) clientExtended(pin task.Pin) string {
	if w.fetch.HasCredentials(cmp.Or(pin.CardURL, pin.AgentURL)) {
		return events.ExtendedPinned
	}
	return events.ExtendedUnavailable
}
