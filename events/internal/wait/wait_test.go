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
