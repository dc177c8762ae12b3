package worker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTimeout: each call of the handler runs under its own deadline, no
// later than the caller's, and its context ends when it returns.
func TestTimeout(t *testing.T) {
	soon, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := []struct {
		name   string
		ctx    context.Context
		d      time.Duration
		within time.Duration // the deadline the handler sees, from now
	}{
		{"its own deadline", context.Background(), time.Hour, time.Hour},
		{"the caller's, when sooner", soon, time.Hour, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var inner context.Context
			start := time.Now()
			timeout(c.d)(func(ctx context.Context, _ *delivered) (string, error) {
				inner = ctx
				return "", nil
			})(c.ctx, &delivered{})
			end := time.Now()
			deadline, ok := inner.Deadline()
			if !ok || deadline.After(end.Add(c.within)) || deadline.Before(start.Add(c.within-time.Second)) {
				t.Errorf("handler's deadline = %v (set %v), want %v from the call", deadline.Sub(start), ok, c.within)
			}
			if inner.Err() == nil {
				t.Error("the handler's context is still live after it returned")
			}
		})
	}
}

// TestTimeoutEndsTheHandler: a handler that outlasts its deadline sees its
// context end with DeadlineExceeded, each attempt afresh.
func TestTimeoutEndsTheHandler(t *testing.T) {
	var errs []error
	h := timeout(20 * time.Millisecond)(func(ctx context.Context, _ *delivered) (string, error) {
		<-ctx.Done()
		errs = append(errs, ctx.Err())
		return "", transient(ctx.Err())
	})
	retry(1, time.Millisecond)(h)(context.Background(), &delivered{})
	if len(errs) != 2 || !errors.Is(errs[0], context.DeadlineExceeded) || !errors.Is(errs[1], context.DeadlineExceeded) {
		t.Fatalf("attempts ended with %v, want two deadlines exceeded", errs)
	}
}
