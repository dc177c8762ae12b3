package store_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store/natstest"
)

// withJS runs fn with a JetStream client of a fresh embedded server
// (natstest.StartJetStream), shut down when the test ends.
func withJS(tb testing.TB, fn func(js jetstream.JetStream)) {
	tb.Helper()
	fn(startJS(tb))
}

// startJS is withJS for tests that need the client outside a closure.
func startJS(tb testing.TB) jetstream.JetStream {
	tb.Helper()
	_, _, js := natstest.StartJetStream(tb)
	return js
}

// bucketSeq names fresh buckets within one server.
var bucketSeq atomic.Int64

func freshName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, bucketSeq.Add(1))
}
