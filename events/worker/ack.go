package worker

import (
	"context"

	"github.com/rs/zerolog"
)

// acknowledge acknowledges an event the handler handled: each event is
// acknowledged only after every event it caused is published (the handler
// returns once it is). A failed acknowledgement is logged; the event is
// redelivered and handled again (its outcomes are idempotent). Errors pass
// through to the wrappers outside.
func acknowledge(log zerolog.Logger) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			outcome, err := h(ctx, d)
			if err != nil {
				return outcome, err
			}
			if aerr := d.msg.Ack(); aerr != nil {
				log.Warn().Err(aerr).Msg("ack failed; the event will be redelivered")
			}
			return outcome, nil
		}
	}
}
