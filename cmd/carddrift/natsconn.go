package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsFlags are the connection flags shared by serve, watch and simulate.
type natsFlags struct {
	url     string
	creds   string
	tlsCert string
	tlsKey  string
	tlsCA   string
}

func (n *natsFlags) register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&n.url, "nats-url", "", "NATS server URL(s), comma-separated (empty: an embedded server where the command supports one)")
	fs.StringVar(&n.creds, "creds", "", "NATS credentials file")
	fs.StringVar(&n.tlsCert, "tls-cert", "", "client certificate (PEM) for NATS TLS")
	fs.StringVar(&n.tlsKey, "tls-key", "", "client key (PEM) for NATS TLS")
	fs.StringVar(&n.tlsCA, "tls-ca", "", "CA bundle (PEM) to verify the NATS servers")
}

// connect dials NATS with the flags' credentials and TLS settings.
func (n *natsFlags) connect(name string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
	}
	if n.creds != "" {
		opts = append(opts, nats.UserCredentials(n.creds))
	}
	if n.tlsCert != "" || n.tlsKey != "" || n.tlsCA != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if n.tlsCert != "" || n.tlsKey != "" {
			if n.tlsCert == "" || n.tlsKey == "" {
				return nil, usagef("--tls-cert and --tls-key go together")
			}
			cert, err := tls.LoadX509KeyPair(n.tlsCert, n.tlsKey)
			if err != nil {
				return nil, usagef("TLS key pair: %v", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		if n.tlsCA != "" {
			pem, err := os.ReadFile(n.tlsCA)
			if err != nil {
				return nil, usagef("--tls-ca: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, usagef("--tls-ca %s holds no PEM certificate", n.tlsCA)
			}
			cfg.RootCAs = pool
		}
		opts = append(opts, nats.Secure(cfg))
	}
	nc, err := nats.Connect(n.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", n.url, err)
	}
	return nc, nil
}

// defaultNATSURL is where the client commands connect without --nats-url.
const defaultNATSURL = "nats://127.0.0.1:4222"

// jetStream connects (connect; to defaultNATSURL when --nats-url is empty)
// and returns the connection, which the caller closes, with its JetStream
// client.
func (n *natsFlags) jetStream(name string) (*nats.Conn, jetstream.JetStream, error) {
	if n.url == "" {
		n.url = defaultNATSURL
	}
	nc, err := n.connect(name)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
