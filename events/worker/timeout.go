package worker

import (
	"context"
	"time"
)

// timeout bounds each call of the handler by d (Options.HandleTimeout):
// inside retry, every attempt has its own deadline. The handler's fetches,
// store calls and publishes end with the context.
func timeout(d time.Duration) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, m *delivered) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return h(ctx, m)
		}
	}
}
