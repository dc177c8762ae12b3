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

// storeSource is an open connection to carddrift's stores and streams: a
// live deployment, or an embedded server on a copy of a store directory.
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

// storeFlags say where replay, impact and fleet find the stores.
type storeFlags struct {
	nats    natsFlags
	dataDir string
	copy    offlineCopy // what of --data-dir the command needs
}

// register adds the connection flags and --data-dir; reads says what the
// command does offline.
func (s *storeFlags) register(fs *flag.FlagSet, reads string) {
	s.nats.register(fs)
	fs.StringVar(&s.dataDir, "data-dir", "", reads+" from this store directory (the one `serve` or `demo --data-dir` wrote); it is copied first and never changed")
}

// open connects to --nats-url or a copy of --data-dir and binds the stores.
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
	if s.dataDir == "" {
		n := s.nats // jetStream sets the default URL on its copy only
		src.nc, src.js, err = n.jetStream(name)
	} else if src.off, err = openOffline(s.dataDir, s.copy); err == nil {
		if src.nc, err = src.off.connect(name); err == nil {
			src.js, err = jetstream.New(src.nc)
		}
	}
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if src.stores, err = store.Bind[task.Pin](bctx, src.js, store.DefaultConfig()); err != nil {
		return nil, fmt.Errorf("open the carddrift stores: %w", err)
	}
	return src, nil
}

type outputFlags struct {
	format string
	out    string
}

func (o *outputFlags) register(fs *flag.FlagSet, formats string) {
	fs.StringVar(&o.format, "format", "text", formats)
	fs.StringVar(&o.out, "out", "", "write the output to this file instead of stdout")
}

func (o *outputFlags) check() error {
	switch o.format {
	case "text", "json", "html":
		return nil
	}
	return usagef("--format %q: want text, json or html", o.format)
}

// writeReport renders a report in o's format to stdout or --out, once whole.
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
	if o.out == "" || o.out == "-" {
		_, err := e.stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(o.out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(e.stderr, "carddrift: wrote %s (%d bytes)\n", o.out, buf.Len())
	return nil
}
