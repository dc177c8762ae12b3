package service

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConnectOptions say how a carddrift process reaches a NATS deployment.
type ConnectOptions struct {
	// URL is the server URL, or several comma-separated.
	URL string
	// Name names the connection (shown by the server).
	Name string
	// Creds is a NATS credentials file ("": none).
	Creds string
	// TLSCert and TLSKey (both or neither), TLSCA: PEM files.
	TLSCert, TLSKey, TLSCA string
	// APIPrefix is ConnectJetStream's JetStream API prefix ("": $JS.API).
	APIPrefix string
	// WaitForServer makes Connect return even when no server answers yet
	// (nats.RetryOnFailedConnect); Open waits for it.
	WaitForServer bool
}

// Connect dials NATS: a 5s connect timeout, reconnecting for ever every
// second, with the credentials and TLS settings of o (ErrInvalidOptions
// when they cannot be used).
func Connect(o ConnectOptions) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
	}
	if o.WaitForServer {
		opts = append(opts, nats.RetryOnFailedConnect(true))
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.TLSCert != "" || o.TLSKey != "" || o.TLSCA != "" {
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		opts = append(opts, nats.Secure(cfg))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", o.URL, err)
	}
	return nc, nil
}

func (o ConnectOptions) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, errors.New("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("TLS key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.TLSCA != "" {
		pem, err := os.ReadFile(o.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", o.TLSCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// ConnectJetStream is Connect and a JetStream client on the connection,
// under o.APIPrefix when set. The caller closes the connection.
func ConnectJetStream(o ConnectOptions) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := Connect(o)
	if err != nil {
		return nil, nil, err
	}
	var js jetstream.JetStream
	if o.APIPrefix != "" {
		js, err = jetstream.NewWithAPIPrefix(nc, o.APIPrefix, jetstream.WithPublishAsyncTimeout(asyncAckTimeout))
	} else {
		js, err = jetstream.New(nc, jetstream.WithPublishAsyncTimeout(asyncAckTimeout))
	}
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// asyncAckTimeout frees the slot of an async publish whose ack never comes
// (its publisher gave up and published again long before).
const asyncAckTimeout = time.Minute
