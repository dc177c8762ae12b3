package worker

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
)

// HandleAt handles ev as Run would handle the first delivery of stream
// sequence seq, stored at stored, and reports whether the worker asked for
// it to be redelivered later (it waits, say, for its task's submission).
// For the external tests that drive a worker without a consumer.
func HandleAt(ctx context.Context, w *Worker, ev events.Event, seq uint64, stored time.Time) (wait bool, err error) {
	_, err = w.handle(ctx, ev, delivery{seq: seq, delivered: 1, stored: stored})
	var we waitError
	if errors.As(err, &we) {
		return true, nil
	}
	return false, err
}

// ErrPinChanged is errPinChanged, for the external tests.
var ErrPinChanged = errPinChanged

// Process runs the worker's handling of msg (decoded as ev) as the
// dispatcher would, for the external tests that deliver a message by hand.
func Process(ctx context.Context, w *Worker, msg jetstream.Msg, ev events.Event) {
	w.process(ctx, msg, ev, time.Now(), func() {})
}
