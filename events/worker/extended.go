package worker

import (
	"cmp"
	"context"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/observation"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

// observeCard observes the live card a task is judged against
// (observation.Card, as the planner's Checker observes it): state is the
// task's extended-card state for its pin. A task of the extended card
// observed through the public card is logged (debug).
func (w *Worker) observeCard(ctx context.Context, pin task.Pin, force bool) (obs fetcher.Observation, state string, err error) {
	obs, state, err = observation.Card(ctx, w.fetch, pin, force)
	if err == nil && pin.UsesExtended() && state == events.ExtendedUnavailable {
		w.log.Debug().Str("task", pin.TaskID).Str("agent", pin.AgentURL).Msg("no extended card: judged on the public card")
	}
	return obs, state, err
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
