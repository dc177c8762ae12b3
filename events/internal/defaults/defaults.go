package defaults

import "time"

// Positive returns v when it is positive, else def.
func Positive[T ~int | ~int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Clock returns now, or time.Now when now is nil.
func Clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
