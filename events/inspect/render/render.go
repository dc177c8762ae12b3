package render

import (
	"bytes"
	"io"
	"strings"
	"time"
)

// TimeLayout is how the inspection tables and pages write a time (in UTC).
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time writes t in UTC with TimeLayout, "-" for the zero time.
func Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(TimeLayout)
}

// Clock writes the time of day of t in UTC (15:04:05), "-" for the zero
// time.
func Clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}

// ShortDigest is the first 12 hex digits of a card digest ("sha256:…"),
// "-" for none.
func ShortDigest(d string) string {
	if d == "" {
		return "-"
	}
	h := strings.TrimPrefix(d, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// OrDash is s, or "-" for an empty cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Buffered runs write on a buffer and writes it to w in one Write, returning
// that Write's error: a renderer's Fprintf calls need no checks of their own.
func Buffered(w io.Writer, write func(io.Writer)) error {
	var b bytes.Buffer
	write(&b)
	_, err := w.Write(b.Bytes())
	return err
}
