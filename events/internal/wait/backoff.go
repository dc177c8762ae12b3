package wait

import (
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential backoff with equal jitter: the n-th
// delay is Base·2ⁿ, at most Max, less a random half. The zero Backoff
// waits nothing; not safe for concurrent use.
type Backoff struct {
	Base, Max time.Duration
	attempt   int
}

// Next returns the delay before the next attempt and counts the attempt.
func (b *Backoff) Next() time.Duration {
	d := b.Base
	for i := 0; i < b.attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	b.attempt++
	if d <= 1 {
		return max(d, 0)
	}
	half := d / 2
	return half + rand.N(d-half)
}

// Reset starts the delays again from Base.
func (b *Backoff) Reset() { b.attempt = 0 }
