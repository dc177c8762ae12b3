package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	ctx := context.Background()
	if err := Sleep(ctx, time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v, want nil", err)
	}
	if err := Sleep(ctx, 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	for _, d := range []time.Duration{0, -time.Second, time.Hour} {
		if err := Sleep(done, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(canceled, %v) = %v, want context.Canceled", d, err)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	// The cap of each delay: 100, 200, 400, 800ms, then 1s for ever.
	caps := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, c := range caps {
		c *= time.Millisecond
		if d := b.Next(); d < c/2 || d > c {
			t.Errorf("delay %d = %v, want within [%v, %v]", i, d, c/2, c)
		}
	}
	b.Reset()
	if d := b.Next(); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("after Reset: %v, want within [50ms, 100ms]", d)
	}
	var zero Backoff
	if d := zero.Next(); d != 0 {
		t.Errorf("zero Backoff: %v, want 0", d)
	}
}
