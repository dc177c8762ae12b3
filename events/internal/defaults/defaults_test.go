package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	for _, tc := range []struct{ v, def, want time.Duration }{
		{0, time.Second, time.Second},
		{-1, time.Second, time.Second},
		{time.Millisecond, time.Second, time.Millisecond},
	} {
		if got := Positive(tc.v, tc.def); got != tc.want {
			t.Errorf("Positive(%v, %v) = %v, want %v", tc.v, tc.def, got, tc.want)
		}
	}
	if got := Positive(0, 7); got != 7 {
		t.Errorf("Positive(0, 7) = %d, want 7", got)
	}
}

func TestClock(t *testing.T) {
	fixed := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	if got := Clock(func() time.Time { return fixed })(); !got.Equal(fixed) {
		t.Errorf("Clock(fixed)() = %v, want %v", got, fixed)
	}
	if got := Clock(nil)(); time.Since(got) > time.Minute {
		t.Errorf("Clock(nil)() = %v, want about now", got)
	}
}
