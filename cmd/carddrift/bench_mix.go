package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/fleet"
)

// The detection phase's cost figures beside the fleet's own: the baseline
// (the same traffic, no carddrift) and the efficient publisher (the stored
// messages again, as cheaply as NATS allows), each into the raw consumer.

// MixBaseline is what the detection phase's traffic costs with no carddrift
// at all: the same traffic from the same simulated clients onto a scratch
// stream of the same server, consumed and acknowledged by one raw durable
// consumer, a process of its own.
type MixBaseline struct {
	RawFigure
	// CarddriftTotalMsPer1000 is the detection phase's CPU counted alike
	// (sideTotal), Ratio it over TotalMsPer1000 (absent when a figure was
	// not read).
	CarddriftTotalMsPer1000 *float64 `json:"carddriftTotalCpuMsPer1000Events,omitempty"`
	Ratio                   *float64 `json:"ratio,omitempty"`
}

// Efficient is the third figure of the cost comparison: the detection
// phase's stored messages published again as cheaply as NATS allows (one
// connection, asynchronously, at their stored pace) to the raw consumer;
// its totals count alike the baseline's.
type Efficient struct{ RawFigure }

// RawFigure is what the raw consumer's side of a cost figure spent on
// Events: its own CPU, serve's and the server's meanwhile (Cost: serve's
// process carries an embedded server's work, its workers idle), and
// TotalMsPer1000, the raw consumer's plus the server's (baselineTotal).
type RawFigure struct {
	Events          int64    `json:"events"`
	RawCPUMsPer1000 float64  `json:"rawCpuMsPer1000Events"`
	Cost            *Cost    `json:"cost"`
	TotalMsPer1000  *float64 `json:"totalCpuMsPer1000Events,omitempty"`
}

// figure is the raw side's figure.
func (s rawSide) figure() RawFigure {
	r := RawFigure{Events: s.events, RawCPUMsPer1000: 1e6 * s.cpu.Seconds() / float64(s.events), Cost: s.cost}
	if base := baselineTotal(s.cost); base != nil {
		t := *base + r.RawCPUMsPer1000
		r.TotalMsPer1000 = &t
	}
	return r
}

// scratchPublisher publishes what the simulated clients address to the
// lifecycle subjects (a2a.task.…) under a scratch stream's subject instead
// (carddrift.bench.<run>.…), so that the deployment's workers never see it.
type scratchPublisher struct {
	jetstream.Publisher
	subject string
}

func (p scratchPublisher) on(subject string) string {
	rest, ok := strings.CutPrefix(subject, "a2a.task")
	if !ok {
		return subject // not a lifecycle subject: left to fail as it would
	}
	return p.subject + rest
}

func (p scratchPublisher) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return p.Publisher.Publish(ctx, p.on(subject), data, opts...)
}

func (p scratchPublisher) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	m.Subject = p.on(m.Subject)
	return p.Publisher.PublishMsg(ctx, m, opts...)
}

func (p scratchPublisher) PublishAsync(subject string, data []byte, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	return p.Publisher.PublishAsync(p.on(subject), data, opts...)
}

func (p scratchPublisher) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	m.Subject = p.on(m.Subject)
	return p.Publisher.PublishMsgAsync(m, opts...)
}

// scratchConfig is what a scratch stream keeps of the lifecycle stream's
// configuration.
func scratchConfig(lifecycle jetstream.StreamConfig) jetstream.StreamConfig {
	return jetstream.StreamConfig{Storage: lifecycle.Storage, Duplicates: lifecycle.Duplicates, MaxMsgSize: lifecycle.MaxMsgSize}
}

// benchMixBaseline plays the detection phase's traffic again (the same
// fleet, seed and schedule) for the raw consumer.
func benchMixBaseline(ctx context.Context, js jetstream.JetStream, f *benchFlags, lifecycle jetstream.StreamConfig, embedded bool) (*MixBaseline, error) {
	fl, err := startFleet(ctx, &f.demo)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	sched, err := fleet.Schedule(f.demo.seed, fl.Agents(), nil, f.demo.duration, f.demo.driftShare)
	if err != nil {
		return nil, usageError{err}
	}
	side, err := f.runRaw(ctx, js, scratchConfig(lifecycle), embedded, func(ctx context.Context, s scratch) error {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		player, err := fl.Play(ctx, sched)
		if err != nil {
			return err
		}
		defer player.Stop()
		traffic, err := fleet.NewTraffic(fleet.TrafficOptions{
			JetStream: scratchPublisher{Publisher: js, subject: s.subject}, Schedule: sched, Start: player.Start(),
			Duration: f.demo.duration, Seed: f.demo.seed, TaskEvery: f.demo.taskEvery, Spanning: true, TaskPrefix: "baseline-",
		})
		if err != nil {
			return err
		}
		traffic.Run(ctx)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return &MixBaseline{RawFigure: side.figure()}, nil
}

// Bounds of the efficient publisher's copy of the detection phase's
// messages (held in memory so that reading them costs the server nothing
// while the figure is taken).
const (
	efficientMaxBytes   = 512 << 20
	efficientMaxPending = 4096
)

// storedMsg is one lifecycle message as stored, with its time.
type storedMsg struct {
	msg *nats.Msg
	at  time.Time
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
			rest, ok := strings.CutPrefix(m.Subject(), "a2a.task.")
			if !ok {
				continue
			}
			if bytes += len(m.Data()) + len(m.Subject()); bytes > efficientMaxBytes {
				return nil, errEfficientTooLarge
			}
			out = append(out, storedMsg{msg: &nats.Msg{Subject: rest, Header: m.Headers(), Data: m.Data()}, at: md.Timestamp})
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

// benchEfficient takes the third figure: the detection phase's stored
// messages (lifecycle stream sequences first to last) again, published
// from one connection, asynchronously, each no earlier than its stored
// offset from the first, into the raw consumer.
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
		return nil, errRawEmpty
	}
	side, err := f.runRaw(ctx, js, scratchConfig(lifecycle), embedded, func(ctx context.Context, s scratch) error {
		start := time.Now()
		for _, m := range msgs {
			if wait := m.at.Sub(msgs[0].at) - time.Since(start); wait > time.Millisecond {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			m.msg.Subject = s.subject + "." + m.msg.Subject
			if _, err := js.PublishMsgAsync(m.msg); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return nil, err
	}
	return &Efficient{side.figure()}, nil
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
	one := 1e6
	return ratio(&one, ms)
}

// compare fills the ratio against the detection phase's cost c.
func (b *MixBaseline) compare(c *Cost) {
	b.CarddriftTotalMsPer1000 = sideTotal(c)
	b.Ratio = ratio(b.CarddriftTotalMsPer1000, b.TotalMsPer1000)
}

// ratios computes the bars from the detection phase's cost c, the
// baseline b and the efficient publisher's figure e.
func ratios(c *Cost, b *MixBaseline, e *Efficient) *Ratios {
	r := &Ratios{DeploymentEventsPerCoreS: perCore(sideTotal(c)), ServeEventsPerCoreS: perCore(c.ServeCPUMsPer1000),
		Deployment: ratio(sideTotal(c), e.TotalMsPer1000), Emitter: ratio(b.TotalMsPer1000, e.TotalMsPer1000)}
	if !c.Embedded {
		r.Serve = ratio(c.ServeCPUMsPer1000, &b.RawCPUMsPer1000)
	}
	return r
}

// sideTotal is the deployment's CPU per 1,000 events beside the consumer
// itself: with an embedded server serve's process (the server's and
// serve's), with a standalone one serve's plus the server's. Nil when a
// figure it needs was not read.
func sideTotal(c *Cost) *float64 {
	if c.ServeCPUMsPer1000 == nil {
		return nil
	}
	t := *c.ServeCPUMsPer1000
	if !c.Embedded {
		if c.ServerCPUMsPer1000 == nil {
			return nil
		}
		t += *c.ServerCPUMsPer1000
	}
	return &t
}

// baselineTotal is the baseline's side of the comparison: with an embedded
// server serve's process carried only the server's work, so it counts;
// with a standalone one serve was idle, and the server's counts.
func baselineTotal(c *Cost) *float64 {
	if c.Embedded {
		return c.ServeCPUMsPer1000
	}
	return c.ServerCPUMsPer1000
}

// write prints the baseline's lines, indented.
func (b *MixBaseline) write(w io.Writer) {
	fmt.Fprintf(w, "baseline: the detection phase's traffic again (fleet, seed, schedule, duration) onto a scratch stream of the same server,\n"+
		"  consumed and acknowledged by one raw durable consumer, a process of its own: %d events\n", b.Events)
	fmt.Fprintf(w, "  raw consumer's CPU: %.0f ms per 1,000\n", b.RawCPUMsPer1000)
	c := b.Cost
	switch {
	case c.Embedded && c.ServeCPUMsPer1000 != nil:
		fmt.Fprintf(w, "  serve's process (its embedded server's work for the traffic; its workers idle): %.0f ms per 1,000\n", *c.ServeCPUMsPer1000)
		fmt.Fprintf(w, "  (the raw consumer crosses a process boundary to the server, serve's workers do not: its deliveries and acks\n"+
			"  cost the server more than the workers' do, so this baseline is a little high and the ratio flatters carddrift)\n")
	case !c.Embedded && c.ServerCPUMsPer1000 != nil:
		fmt.Fprintf(w, "  NATS server's CPU: %.0f ms per 1,000", *c.ServerCPUMsPer1000)
		if c.ServeCPUMsPer1000 != nil {
			fmt.Fprintf(w, " (serve, idle: %.0f)", *c.ServeCPUMsPer1000)
		}
		fmt.Fprintln(w)
	}
	if b.Ratio != nil {
		fmt.Fprintf(w, "  deployment's CPU per 1,000 events: carddrift %.0f ms, baseline %.0f ms: %.2f× the baseline\n",
			*b.CarddriftTotalMsPer1000, *b.TotalMsPer1000, *b.Ratio)
	} else {
		var why []string
		for _, k := range slices.Sorted(maps.Keys(c.NotRead)) {
			why = append(why, k+": "+c.NotRead[k])
		}
		fmt.Fprintf(w, "  (no ratio: a CPU figure was not read — %s)\n", strings.Join(why, "; "))
	}
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
