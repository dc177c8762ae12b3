package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// permanentError marks an event that can never succeed.
type permanentError struct {
	reason DeadLetterReason
	err    error
}

func (e permanentError) Error() string { return string(e.reason) + ": " + e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// errPastMaxDeliver is the cause of an event dead-lettered on a delivery
// past MaxDeliver, without being handled again.
var errPastMaxDeliver = errors.New("delivered more often than MaxDeliver; dead-lettered without handling it again")

// poison dead-letters what cannot succeed, and settles the event as the
// dead letter went (deadLetter: dead-letter once the copy is stored and the
// event terminated, retry while it is NAKed for redelivery):
//   - a permanentError, with its reason, on any delivery;
//   - any other failure (a store or publish error that outlasted retry,
//     errPastMaxDeliver) on the maxDeliver-th delivery or a later one, with
//     ReasonMaxDeliver: the worker, not the server, gives up on an event
//     (the consumer redelivers without limit, store.Config.LifecycleConsumer).
//
// A write the store refused for lack of space (noSpaceError) is never
// dead-lettered: the event is written once space returns. Nothing else is
// dead-lettered: a non-positive maxDeliver is no limit.
// The event is terminated only once its copy is stored (deadLetter), so no
// dead-letter outage loses it.
func poison(maxDeliver int, deadLetter func(context.Context, jetstream.Msg, DeadLetterReason, error) string) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			outcome, err := h(ctx, d)
			if err == nil {
				return outcome, nil
			}
			var pe permanentError
			var ns noSpaceError
			switch {
			case errors.As(err, &ns):
				return outcome, err
			case errors.As(err, &pe):
				return deadLetter(ctx, d.msg, pe.reason, err), nil
			case maxDeliver > 0 && int(d.at.delivered) >= maxDeliver:
				return deadLetter(ctx, d.msg, ReasonMaxDeliver, err), nil
			}
			return outcome, err
		}
	}
}

// pastMaxDeliver does not handle an event delivered more often than
// maxDeliver (when positive): it fails with errPastMaxDeliver, which poison
// dead-letters. Its dead letter was due on its maxDeliver-th delivery: that
// dead letter failed, or handling the event ended the process (an event
// that crashes every worker that handles it would otherwise crash them
// forever). The maxDeliver-th delivery itself is still handled.
func pastMaxDeliver(maxDeliver int) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			if maxDeliver > 0 && int(d.at.delivered) > maxDeliver {
				return "", fmt.Errorf("%w: delivered %d times", errPastMaxDeliver, d.at.delivered)
			}
			return h(ctx, d)
		}
	}
}

// deadLetterOutcome dead-letters msg and returns the outcome to count:
// dead-letter once the copy is stored, retry while it is not.
func (w *Worker) deadLetterOutcome(ctx context.Context, msg jetstream.Msg, reason DeadLetterReason, cause error) string {
	if w.deadLetter(ctx, msg, reason, cause) {
		return outcomeDeadLetter
	}
	return outcomeRetry
}
