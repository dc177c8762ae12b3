// Package defaults fills in the defaults of options structs the way every
// package under events/ documents them: a count or duration that is zero or
// negative takes its default, and a nil clock is time.Now.
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
