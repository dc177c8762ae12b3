package worker

import (
	"context"

	"github.com/rs/zerolog"
)

// redeliver NAKs an event that failed and that no wrapper inside it
// settled (a store or publish failure that outlasted retry, and any other
// error) with the growing delay of redelivery (redeliveryDelay), and counts
// it as retry. The consumer redelivers without limit: poison, inside it,
// dead-letters the event on its MaxDeliver-th delivery instead.
func redeliver(log zerolog.Logger) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			outcome, err := h(ctx, d)
			if err == nil {
				return outcome, nil
			}
			delay := redeliveryDelay(d.msg)
			log.Warn().Err(err).Str("type", d.ev.Type).Str("task", d.ev.TaskID()).Dur("retryIn", delay).Msg("event failed; will retry")
			d.msg.NakWithDelay(delay)
			return outcomeRetry, nil
		}
	}
}
