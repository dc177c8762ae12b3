package worker

import (
	"context"
	"errors"
	"time"

	"github.com/carddrift/carddrift/events/internal/wait"
)

// transientError marks a failure worth retrying (store, publish).
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

func transient(err error) error { return transientError{err} }

// inProcessRetries is how often a transient failure is retried in process
// before the event is NAKed; retryBackoff the first wait between attempts
// (doubling).
const (
	inProcessRetries = 3
	retryBackoff     = 50 * time.Millisecond
)

// retry calls the handler again while it fails with a transientError, up to
// retries more times, after base, then twice as long before each next
// attempt (50, 100, 200 ms in the worker) — unless ctx ends. What is still
// failing is handed on: redeliver NAKs it, or poison dead-letters it on
// its last delivery. Other errors are not retried in process.
func retry(retries int, base time.Duration) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			for attempt := 0; ; attempt++ {
				outcome, err := h(ctx, d)
				var te transientError
				if err == nil || !errors.As(err, &te) || attempt >= retries || ctx.Err() != nil {
					return outcome, err
				}
				if wait.Sleep(ctx, base<<attempt) != nil {
					return outcome, err
				}
			}
		}
	}
}
