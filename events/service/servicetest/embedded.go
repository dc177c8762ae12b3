package servicetest

import (
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/service"
)

// EmbeddedJetStream is the embedded server of Example functions (no
// testing.TB): stop closes it and removes its storage. It panics on failure.
func EmbeddedJetStream() (js jetstream.JetStream, stop func()) {
	dir, err := os.MkdirTemp("", "carddrift-example-")
	if err != nil {
		panic(err)
	}
	srv, err := service.StartEmbedded(dir, 0)
	if err != nil {
		panic(err)
	}
	nc, js, err := service.ConnectJetStream(service.ConnectOptions{URL: srv.ClientURL()})
	if err != nil {
		panic(err)
	}
	return js, func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		os.RemoveAll(dir)
	}
}
