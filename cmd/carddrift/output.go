package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

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
