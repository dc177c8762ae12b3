package main

import (
	"errors"
	"flag"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/service"
)

// natsFlags are the connection flags shared by serve, watch and simulate.
type natsFlags struct {
	url       string
	creds     string
	tlsCert   string
	tlsKey    string
	tlsCA     string
	apiPrefix string // --js-api-prefix (registerClient)
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.url, "nats-url", "", "NATS server URL(s), comma-separated (empty: an embedded server where the command supports one)")
	fs.StringVar(&n.creds, "creds", "", "NATS credentials file")
	fs.StringVar(&n.tlsCert, "tls-cert", "", "client certificate (PEM) for NATS TLS")
	fs.StringVar(&n.tlsKey, "tls-key", "", "client key (PEM) for NATS TLS")
	fs.StringVar(&n.tlsCA, "tls-ca", "", "CA bundle (PEM) to verify the NATS servers")
}

// registerClient adds --js-api-prefix to the connection flags, for the
// commands that use a deployment as a client (watch, simulate, bench).
func (n *natsFlags) registerClient(fs *flag.FlagSet) {
	n.register(fs)
	fs.StringVar(&n.apiPrefix, "js-api-prefix", "", "JetStream API prefix to use (the shipped planner role: JS.carddrift.API, which its account maps onto its own JetStream and its copy of the card stream; or the prefix under which an account imports carddrift's JetStream); empty: $JS.API")
}

// options are the flags as service.ConnectOptions.
func (n *natsFlags) options(name string) service.ConnectOptions {
	return service.ConnectOptions{
		URL: n.url, Name: name, Creds: n.creds, TLSCert: n.tlsCert, TLSKey: n.tlsKey, TLSCA: n.tlsCA,
		APIPrefix: n.apiPrefix,
	}
}

// usage makes ErrInvalidOptions a usage error.
func usage(err error) error {
	if errors.Is(err, service.ErrInvalidOptions) {
		return usageError{err}
	}
	return err
}

// defaultNATSURL is where the client commands connect without --nats-url.
const defaultNATSURL = "nats://127.0.0.1:4222"

// jetStream connects (to defaultNATSURL when --nats-url is empty) and
// returns the connection, which the caller closes, with its JetStream client
// under --js-api-prefix (service.ConnectJetStream).
func (n *natsFlags) jetStream(name string) (*nats.Conn, jetstream.JetStream, error) {
	if n.url == "" {
		n.url = defaultNATSURL
	}
	nc, js, err := service.ConnectJetStream(n.options(name))
	return nc, js, usage(err)
}
