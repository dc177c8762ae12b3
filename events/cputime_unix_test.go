//go:build unix

package events_test

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time (user + system) the process has used so far.
// Benchmarks compare CPU time rather than wall time so that other processes
// competing for the machine do not skew a ratio.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
