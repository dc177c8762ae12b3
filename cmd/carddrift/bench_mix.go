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

// rawFigure is the figure of n events, the raw consumer spending cpu.
func rawFigure(n int64, cpu time.Duration, cost *Cost) RawFigure {
	r := RawFigure{Events: n, RawCPUMsPer1000: 1e6 * cpu.Seconds() / float64(n), Cost: cost}
	if base := baselineTotal(cost); base != nil {
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

// errBaselineEmpty: the baseline's clients published nothing.
var errBaselineEmpty = errors.New("the baseline's traffic published no events")

// benchMixBaseline plays the detection phase's traffic again onto a scratch
// stream (the lifecycle stream's storage and duplicate window) for the raw
// consumer, and returns its cost.
func benchMixBaseline(ctx context.Context, js jetstream.JetStream, f *benchFlags, lifecycle jetstream.StreamConfig, embedded bool) (*MixBaseline, error) {
	s, err := newScratch(ctx, js, jetstream.StreamConfig{Storage: lifecycle.Storage, Duplicates: lifecycle.Duplicates,
		MaxMsgSize: lifecycle.MaxMsgSize})
	if err != nil {
		return nil, err
	}
	defer s.drop()
	proc, err := startRawConsumer(ctx, &f.nats, s.name, "raw", 0, f.demo.duration+5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer proc.kill()
	fl, err := startFleet(ctx, &f.demo)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	// The detection phase's schedule: runBench set f.demo.driftShare.
	sched, err := fleet.Schedule(f.demo.seed, fl.Agents(), nil, f.demo.duration, f.demo.share())
	if err != nil {
		return nil, usageError{err}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	player, err := fl.Play(runCtx, sched)
	if err != nil {
		return nil, err
	}
	defer player.Stop()
	traffic, err := fleet.NewTraffic(fleet.TrafficOptions{
		JetStream: scratchPublisher{Publisher: js, subject: s.subject}, Schedule: sched, Start: player.Start(),
		Duration: f.demo.duration, Seed: f.demo.seed, TaskEvery: f.demo.taskEvery, Spanning: true, TaskPrefix: "baseline-",
	})
	if err != nil {
		return nil, err
	}
	before := f.cost.read(ctx)
	traffic.Run(runCtx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, s.name)
	if err != nil {
		return nil, err
	}
	n := st.CachedInfo().State.Msgs
	if n == 0 {
		return nil, errBaselineEmpty
	}
	if err := waitDrained(ctx, js, s.name, []string{"raw"}, 10*time.Millisecond, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("baseline: the raw consumer: %w", err)
	}
	after := f.cost.read(ctx)
	cpu, err := proc.finish(ctx, int(n))
	if err != nil {
		return nil, err
	}
	return &MixBaseline{RawFigure: rawFigure(int64(n), cpu, f.cost.cost(before, after, int64(n), embedded))}, nil
}

// compare fills the ratio against the detection phase's cost c.
func (b *MixBaseline) compare(c *Cost) {
	b.CarddriftTotalMsPer1000 = sideTotal(c)
	b.Ratio = ratio(b.CarddriftTotalMsPer1000, b.TotalMsPer1000)
}

// sideTotal is the deployment's CPU per 1,000 events beside the consumer
// itself: with an embedded server serve's process (the server's and
// serve's), with a standalone one serve's plus the server's. Nil when a
// figure it needs was not read.
func sideTotal(c *Cost) *float64 {
	if c == nil || c.ServeCPUMsPer1000 == nil {
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
	if c == nil {
		return nil
	}
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
