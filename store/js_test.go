package store_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// withJS runs fn with a JetStream client of a fresh embedded server (file
// storage under tb.TempDir(), random loopback port), shut down when the test
// ends.
func withJS(tb testing.TB, fn func(js jetstream.JetStream)) {
	tb.Helper()
	fn(startJS(tb))
}

// startJS is withJS for tests that need the client outside a closure.
func startJS(tb testing.TB) jetstream.JetStream {
	tb.Helper()
	ns, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoSigs:    true,
		NoLog:     true,
	})
	if err != nil {
		tb.Fatalf("server.NewServer() error = %v", err)
	}
	ns.Start()
	tb.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(10 * time.Second) {
		tb.Fatalf("embedded nats-server not ready after 10s")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		tb.Fatalf("nats.Connect() error = %v", err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("jetstream.New() error = %v", err)
	}
	return js
}

// bucketSeq names fresh buckets within one server.
var bucketSeq atomic.Int64

func freshName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, bucketSeq.Add(1))
}
