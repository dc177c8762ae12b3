package worker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRetry: only a transientError is retried in process, at most retries
// more times, with a doubling wait, and not once the context has ended;
// the last result is handed on as it is.
func TestRetry(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	const base = 5 * time.Millisecond
	cases := []struct {
		name  string
		ctx   context.Context
		h     *results
		calls int
		err   error
	}{
		{"handled", context.Background(), handled("drift", nil), 1, nil},
		{"transient twice, then handled", context.Background(), &results{rs: []result{{"", errStore}, {"", errStore}, {"drift", nil}}}, 3, nil},
		{"transient every time", context.Background(), handled("", errStore), 1 + 3, errStore},
		{"permanent", context.Background(), handled("", errCorrupt), 1, errCorrupt},
		{"waiting for the pin", context.Background(), handled("", waitError{delay: time.Second}), 1, waitError{delay: time.Second}},
		{"unclassified", context.Background(), handled("", errOther), 1, errOther},
		{"transient, context ended", canceled, handled("", errStore), 1, errStore},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var at []time.Time
			h := retry(3, base)(func(ctx context.Context, d *delivered) (string, error) {
				at = append(at, time.Now())
				return c.h.handle(ctx, d)
			})
			outcome, err := h(c.ctx, &delivered{})
			if !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Errorf("retry = %q, %v; want error %v", outcome, err, c.err)
			}
			if err == nil && outcome != "drift" {
				t.Errorf("retry = %q, want the handler's drift", outcome)
			}
			if c.h.calls != c.calls {
				t.Errorf("handled %d times, want %d", c.h.calls, c.calls)
			}
			for i := 1; i < len(at); i++ {
				if gap, want := at[i].Sub(at[i-1]), base<<(i-1); gap < want {
					t.Errorf("attempt %d came %v after the one before, want at least %v", i+1, gap, want)
				}
			}
		})
	}
}

// TestRetryStopsWhenTheContextEnds: a shutdown during the backoff ends the
// retries at once, with the last error.
func TestRetryStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := handled("", errStore)
	_, err := retry(3, time.Hour)(func(ctx context.Context, d *delivered) (string, error) {
		defer cancel()
		return h.handle(ctx, d)
	})(ctx, &delivered{})
	if !errors.Is(err, errStore) || h.calls != 1 {
		t.Fatalf("retry with its context ended in the backoff = %v after %d calls, want the transient error after 1", err, h.calls)
	}
}
