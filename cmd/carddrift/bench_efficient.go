package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of the efficient publisher's copy of the detection phase's
// messages (held in memory so that reading them costs the server nothing
// while the figure is taken).
const (
	efficientMaxBytes   = 512 << 20
	efficientMaxPending = 4096
)

// Efficient is the third figure of the cost comparison: the detection
// phase's stored messages published again as cheaply as NATS allows (one
// connection, asynchronously, at their stored pace) to the raw consumer;
// its totals count alike the baseline's.
type Efficient struct{ RawFigure }

// storedMsg is one lifecycle message as stored, with its time.
type storedMsg struct {
	subject string
	header  nats.Header
	data    []byte
	at      time.Time
}

// errEfficientTooLarge: the detection phase stored more than the copy may
// hold.
var errEfficientTooLarge = errors.New("the detection phase's messages exceed the efficient publisher's copy bound")

// storedRange reads the messages of stream from sequence first to last
// (inclusive) whose subject starts with a2a.task., with an ordered
// consumer, into memory (at most efficientMaxBytes).
func storedRange(ctx context.Context, js jetstream.JetStream, stream string, first, last uint64) ([]storedMsg, error) {
	if last < first {
		return nil, nil
	}
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: first})
	if err != nil {
		return nil, err
	}
	var out []storedMsg
	var bytes int
	for {
		batch, err := c.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if md.Sequence.Stream > last {
				return out, nil
			}
			if !strings.HasPrefix(m.Subject(), "a2a.task.") {
				continue
			}
			bytes += len(m.Data()) + len(m.Subject())
			if bytes > efficientMaxBytes {
				return nil, errEfficientTooLarge
			}
			out = append(out, storedMsg{subject: m.Subject(), header: m.Headers(), data: m.Data(), at: md.Timestamp})
			if md.Sequence.Stream == last {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil // the range's end was trimmed away
		}
	}
}

// publishPaced publishes msgs under subject (for a2a.task) from one
// connection, asynchronously, each no earlier than its stored offset from
// the first, and waits for every PubAck.
func publishPaced(ctx context.Context, js jetstream.JetStream, subject string, msgs []storedMsg) error {
	start := time.Now()
	for _, m := range msgs {
		if wait := m.at.Sub(msgs[0].at) - time.Since(start); wait > time.Millisecond {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		rest, _ := strings.CutPrefix(m.subject, "a2a.task")
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subject + rest, Header: m.header, Data: m.data}); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// benchEfficient takes the third figure: the detection phase's stored
// messages (lifecycle stream sequences first to last) again, from an
// efficient publisher, into the raw consumer.
func benchEfficient(ctx context.Context, nc *nats.Conn, f *benchFlags, lifecycle jetstream.StreamConfig, first, last uint64, embedded bool) (*Efficient, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(efficientMaxPending))
	if err != nil {
		return nil, err
	}
	msgs, err := storedRange(ctx, js, lifecycle.Name, first, last)
	if err != nil {
		return nil, fmt.Errorf("reading the detection phase's messages: %w", err)
	}
	if len(msgs) == 0 {
		return nil, errBaselineEmpty
	}
	s, err := newScratch(ctx, js, jetstream.StreamConfig{Storage: lifecycle.Storage, Duplicates: lifecycle.Duplicates,
		MaxMsgSize: lifecycle.MaxMsgSize})
	if err != nil {
		return nil, err
	}
	defer s.drop()
	proc, err := startRawConsumer(ctx, &f.nats, s.name, "raw", len(msgs), f.demo.duration+5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer proc.kill()
	before := f.cost.read(ctx)
	if err := publishPaced(ctx, js, s.subject, msgs); err != nil {
		return nil, err
	}
	cpu, err := proc.wait(ctx, len(msgs))
	if err != nil {
		return nil, err
	}
	after := f.cost.read(ctx)
	n := int64(len(msgs))
	return &Efficient{rawFigure(n, cpu, f.cost.cost(before, after, n, embedded))}, nil
}

// Ratios are the cost bars of DESIGN (contract v1.3), each absent when a
// figure it needs was not read, and the events one core carries at the
// measured cost (the deployment's, serve's alone).
type Ratios struct {
	Deployment               *float64 `json:"deployment,omitempty"`
	Serve                    *float64 `json:"serve,omitempty"`
	Emitter                  *float64 `json:"emitter,omitempty"`
	DeploymentEventsPerCoreS *float64 `json:"deploymentEventsPerCoreSecond,omitempty"`
	ServeEventsPerCoreS      *float64 `json:"serveEventsPerCoreSecond,omitempty"`
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b <= 0 {
		return nil
	}
	r := *a / *b
	return &r
}

func perCore(ms *float64) *float64 {
	if ms == nil || *ms <= 0 {
		return nil
	}
	r := 1e6 / *ms
	return &r
}

// ratios computes the bars from the detection phase's cost c, the
// baseline b and the efficient publisher's figure e (either may be nil).
func ratios(c *Cost, b *MixBaseline, e *Efficient) *Ratios {
	r := &Ratios{DeploymentEventsPerCoreS: perCore(sideTotal(c))}
	if c != nil {
		r.ServeEventsPerCoreS = perCore(c.ServeCPUMsPer1000)
	}
	if e != nil {
		r.Deployment = ratio(sideTotal(c), e.TotalMsPer1000)
	}
	if b != nil && c != nil && !c.Embedded {
		r.Serve = ratio(c.ServeCPUMsPer1000, &b.RawCPUMsPer1000)
	}
	if b != nil && e != nil {
		r.Emitter = ratio(b.TotalMsPer1000, e.TotalMsPer1000)
	}
	return r
}

// write prints the efficient publisher's lines and the bars.
func (e *Efficient) write(w io.Writer, r *Ratios) {
	fmt.Fprintf(w, "efficient publisher: the detection phase's %d stored messages again, from one connection, asynchronously, at the pace\n"+
		"  they were stored, onto a scratch stream consumed and acknowledged by one raw durable consumer, a process of its own\n", e.Events)
	fmt.Fprintf(w, "  raw consumer's CPU: %.0f ms per 1,000\n", e.RawCPUMsPer1000)
	if c := e.Cost; c.Embedded && c.ServeCPUMsPer1000 != nil {
		fmt.Fprintf(w, "  serve's process (its embedded server's work; its workers idle): %.0f ms per 1,000\n", *c.ServeCPUMsPer1000)
	} else if c.ServerCPUMsPer1000 != nil {
		fmt.Fprintf(w, "  NATS server's CPU: %.0f ms per 1,000\n", *c.ServerCPUMsPer1000)
	}
	if e.TotalMsPer1000 != nil {
		fmt.Fprintf(w, "  total: %.0f ms per 1,000\n", *e.TotalMsPer1000)
	}
	r.write(w)
}

func (r *Ratios) write(w io.Writer) {
	line := func(what string, v *float64, bar string) {
		if v == nil {
			fmt.Fprintf(w, "  %s: not read\n", what)
			return
		}
		fmt.Fprintf(w, "  %s: %.2f× (bar %s)\n", what, *v, bar)
	}
	fmt.Fprintln(w, "cost bars (DESIGN, contract v1.3):")
	line("deployment as shipped / efficient publisher + raw consumer", r.Deployment, "≤ 2.0")
	line("serve's own CPU / raw consumer's on the fleet's traffic", r.Serve, "≤ 2.5")
	line("the fleet's traffic as the emitter publishes it / the efficient publisher's (server + raw consumer)", r.Emitter, "≤ 1.25")
	if r.DeploymentEventsPerCoreS != nil {
		fmt.Fprintf(w, "  events per second per core: the deployment (serve + server) %.0f", *r.DeploymentEventsPerCoreS)
		if r.ServeEventsPerCoreS != nil {
			fmt.Fprintf(w, ", serve alone %.0f", *r.ServeEventsPerCoreS)
		}
		fmt.Fprintln(w)
	}
}
