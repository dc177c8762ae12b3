package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// storeSource is an open connection to carddrift's stores and streams, for
// the commands that only read them (replay, impact, fleet): a live
// deployment, or an embedded server on a copy of a store directory (off).
type storeSource struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stores *store.Stores[task.Pin]
	off    *offline
}

func (s *storeSource) Close() {
	if s.nc != nil {
		s.nc.Close()
	}
	if s.off != nil {
		s.off.Close()
	}
}

// storeFlags say where the commands that only read the stores (replay,
// impact, fleet) find them: a deployment's NATS, or a store directory.
type storeFlags struct {
	nats    natsFlags
	dataDir string
	// copy is what of --data-dir the command needs (zero: everything).
	copy offlineCopy
}

// register adds the connection flags and --data-dir; reads says what the
// command does offline ("replay offline", "read the pins offline").
func (s *storeFlags) register(fs *flag.FlagSet, reads string) {
	s.nats.register(fs)
	fs.StringVar(&s.dataDir, "data-dir", "", reads+" from this store directory (the one `serve` or `demo --data-dir` wrote); it is copied first and never changed")
}

// open connects to the deployment at --nats-url (default
// nats://127.0.0.1:4222), or, with --data-dir, opens a private copy of that
// store directory offline (see openOffline), and binds the stores.
func (s *storeFlags) open(ctx context.Context, name string) (_ *storeSource, err error) {
	src := &storeSource{}
	defer func() {
		if err != nil {
			src.Close()
		}
	}()
	if s.nats.url != "" && s.dataDir != "" {
		return nil, usagef("--nats-url and --data-dir are exclusive: a live deployment or a store directory")
	}
	if s.dataDir != "" {
		if src.off, err = openOffline(s.dataDir, s.copy); err != nil {
			return nil, err
		}
		src.nc, err = src.off.connect(name)
	} else {
		n := s.nats
		if n.url == "" {
			n.url = defaultNATSURL
		}
		src.nc, err = n.connect(name)
	}
	if err != nil {
		return nil, err
	}
	if src.js, err = jetstream.New(src.nc); err != nil {
		return nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if src.stores, err = store.Bind[task.Pin](bctx, src.js, store.DefaultConfig()); err != nil {
		return nil, fmt.Errorf("open the carddrift stores: %w", err)
	}
	return src, nil
}

// outputFlags are --format and --out of the commands that write a report as
// text, json or html (replay, fleet).
type outputFlags struct {
	format string
	out    string
}

// register adds --format, described by formats, and --out.
func (o *outputFlags) register(fs *flag.FlagSet, formats string) {
	fs.StringVar(&o.format, "format", "text", formats)
	fs.StringVar(&o.out, "out", "", "write the output to this file instead of stdout")
}

// check refuses a --format other than text, json or html.
func (o *outputFlags) check() error {
	switch o.format {
	case "text", "json", "html":
		return nil
	}
	return usagef("--format %q: want text, json or html", o.format)
}

// writeReport renders a report in o's format with asJSON, asHTML or asText
// (any other format) — the inspection packages' WriteJSON, WriteHTML and
// WriteText — and writes it to stdout, or to the file --out, once whole.
// asHTML may be nil where the command refuses --format html.
func writeReport(e *env, o *outputFlags, asJSON, asHTML, asText func(io.Writer) error) error {
	write := asText
	switch o.format {
	case "json":
		write = asJSON
	case "html":
		write = asHTML
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	return o.writeOut(e, buf.Bytes())
}

// writeOut writes b to stdout, or to the file --out.
func (o *outputFlags) writeOut(e *env, b []byte) error {
	if o.out == "" || o.out == "-" {
		_, err := e.stdout.Write(b)
		return err
	}
	if err := os.WriteFile(o.out, b, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(e.stderr, "carddrift: wrote %s (%d bytes)\n", o.out, len(b))
	return nil
}
