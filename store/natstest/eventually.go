package natstest

import (
	"testing"
	"time"
)

// Eventually polls cond every 10ms until it holds, and fails the test with
// what once timeout has passed without it holding. It is the one wait helper
// of carddrift's tests: suites that wait for a store, a consumer or a
// worker's verdict call it (or a helper built on it, such as
// servicetest.Collector.WaitFor) rather than sleeping.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
