//go:build !unix

package events_test

import "time"

var cpuStart = time.Now()

// cpuNow falls back to wall time where getrusage is not available.
func cpuNow() time.Duration { return time.Since(cpuStart) }
