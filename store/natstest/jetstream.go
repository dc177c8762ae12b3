package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StartJetStream starts an embedded nats-server with JetStream (storage in
// t.TempDir(), a random loopback port, no logging) and connects to it, until
// the test ends.
func StartJetStream(t testing.TB) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	return StartJetStreamWith(t, nil)
}

// StartJetStreamWith is StartJetStream with the server's options first
// changed by set, when not nil.
func StartJetStreamWith(t testing.TB, set func(*server.Options)) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts := &server.Options{
		JetStream: true, StoreDir: t.TempDir(), Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
	}
	if set != nil {
		set(opts)
	}
	return start(t, opts)
}

// StartConf is StartJetStream for the configuration file conf, connecting
// with copts (a user's credentials, say).
func StartConf(t testing.TB, conf string, copts ...nats.Option) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("server.ProcessConfigFile: %v", err)
	}
	opts.Host, opts.Port, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, true
	return start(t, opts, copts...)
}

// start starts a server with opts and connects to it with copts.
func start(t testing.TB, opts *server.Options, copts ...nats.Option) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("server.NewServer: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatal("nats-server not ready within 10s")
	}
	nc, err := nats.Connect(srv.ClientURL(), copts...)
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
