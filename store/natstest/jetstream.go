package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StartJetStream starts an embedded nats-server with JetStream (storage in
// t.TempDir(), a random loopback port, no logging) and connects to it. The
// connection and the server are closed when the test ends. Every package's
// tests that need a real JetStream use it.
func StartJetStream(t testing.TB) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	return StartJetStreamWith(t, nil)
}

// StartJetStreamWith is StartJetStream with the server's options first
// changed by set, when not nil (for one, JetStreamMaxStore: a server whose
// storage is capped as a deployment's max_file_store caps it).
func StartJetStreamWith(t testing.TB, set func(*server.Options)) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts := &server.Options{
		JetStream: true, StoreDir: t.TempDir(), Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
	}
	if set != nil {
		set(opts)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("server.NewServer: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatal("nats-server not ready within 10s")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		srv.Shutdown()
		t.Fatalf("nats.Connect: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return srv, nc, js
}
