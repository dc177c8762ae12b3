package natstest

import (
	"testing"
	"time"
)

// Eventually polls cond every 10ms until it holds, and fails the test with
// what once timeout has passed: the one wait helper of carddrift's tests.
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
