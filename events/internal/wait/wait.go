package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done; it returns ctx's error when ctx ended
// first. A d that is not positive does not wait: Sleep returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
