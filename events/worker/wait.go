package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carddrift/carddrift/events/task"
)

// waitError asks for the event to be redelivered after delay without counting
// it as a failure: its task has no pin yet, and its submission may still be on
// its way (a redelivery can bring a task's events out of order).
type waitError struct{ delay time.Duration }

func (e waitError) Error() string { return fmt.Sprintf("no pin yet; retry in %s", e.delay) }

// awaitPin settles an event that waits for its task's pin (a waitError): it
// is NAKed with the wait's delay (outcome waiting), but on the delivery
// before the MaxDeliver-th or any later one (maxDeliver, when positive) it
// is acknowledged as no-pin instead, so that a wait never ends in a dead
// letter. Other errors pass through.
func awaitPin(maxDeliver int) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			outcome, err := h(ctx, d)
			var we waitError
			if !errors.As(err, &we) {
				return outcome, err
			}
			if maxDeliver > 0 && int(d.at.delivered) >= maxDeliver-1 {
				d.msg.Ack()
				return task.OutcomeNoPin, nil
			}
			d.msg.NakWithDelay(we.delay)
			return outcomeWaiting, nil
		}
	}
}
