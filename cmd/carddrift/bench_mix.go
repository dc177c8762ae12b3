package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/fleet"
)

// MixBaseline is what the detection phase's traffic costs with no carddrift:
// the same traffic onto a scratch stream, into the raw consumer.
type MixBaseline struct {
	RawFigure
	// CarddriftTotalMsPer1000 is the detection phase's CPU counted alike
	// (sideTotal), Ratio it over TotalMsPer1000.
	CarddriftTotalMsPer1000 *float64 `json:"carddriftTotalCpuMsPer1000Events,omitempty"`
	Ratio                   *float64 `json:"ratio,omitempty"`
}

// Efficient is the detection phase's stored messages published again as
// cheaply as NATS allows into the raw consumer.
type Efficient struct{ RawFigure }

// RawFigure is what the raw consumer's side of a cost figure spent on
// Events: its own CPU, serve's and the server's meanwhile, and
// TotalMsPer1000, the raw consumer's plus the server's (baselineTotal).
type RawFigure struct {
	Events          int64    `json:"events"`
	RawCPUMsPer1000 float64  `json:"rawCpuMsPer1000Events"`
	Cost            *Cost    `json:"cost"`
	TotalMsPer1000  *float64 `json:"totalCpuMsPer1000Events,omitempty"`
}

func (s rawSide) figure() RawFigure {
	r := RawFigure{Events: s.events, RawCPUMsPer1000: 1e6 * s.cpu.Seconds() / float64(s.events), Cost: s.cost}
	if base := baselineTotal(s.cost); base != nil {
		t := *base + r.RawCPUMsPer1000
		r.TotalMsPer1000 = &t
	}
	return r
}

// scratchPublisher moves the lifecycle subjects (a2a.task.…) under a
// scratch stream's subject, so that the deployment's workers never see them.
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

// scratchConfig is what a scratch stream keeps of the lifecycle stream's.
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

// Bounds of the efficient publisher's in-memory copy of the messages (so
// that reading them costs the server nothing while the figure is taken).
const (
	efficientMaxBytes   = 512 << 20
	efficientMaxPending = 4096
)

type storedMsg struct {
	msg *nats.Msg
	at  time.Time
}

var errEfficientTooLarge = errors.New("the detection phase's messages exceed the efficient publisher's copy bound")

// storedRange reads the a2a.task. messages of stream from sequence first
// to last (inclusive) into memory (at most efficientMaxBytes).
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

// benchEfficient publishes the stored messages first to last again from
// one connection, asynchronously, each no earlier than its stored offset
// from the first, into the raw consumer.
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

// Ratios are DESIGN's cost bars and the events one core carries at the
// measured cost, each absent when a figure it needs was not read.
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

// ratios computes the bars from the detection phase's cost c and the
// figures b and e.
func ratios(c *Cost, b *MixBaseline, e *Efficient) *Ratios {
	r := &Ratios{DeploymentEventsPerCoreS: perCore(sideTotal(c)), ServeEventsPerCoreS: perCore(c.ServeCPUMsPer1000),
		Deployment: ratio(sideTotal(c), e.TotalMsPer1000), Emitter: ratio(b.TotalMsPer1000, e.TotalMsPer1000)}
	if !c.Embedded {
		r.Serve = ratio(c.ServeCPUMsPer1000, &b.RawCPUMsPer1000)
	}
	return r
}

// sideTotal is the deployment's CPU per 1,000 events: serve's process,
// plus a standalone server's. Nil when a figure was not read.
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

// baselineTotal is the server's work for a raw figure: serve's process
// with an embedded server (its workers idle), else the server's.
func baselineTotal(c *Cost) *float64 {
	if c.Embedded {
		return c.ServeCPUMsPer1000
	}
	return c.ServerCPUMsPer1000
}

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

// rawConsumerCommand is the hidden command bench runs as a process of its
// own for its raw figures (crossing the process boundary serve's workers
// cross): one durable pull consumer that consumes and acknowledges. It
// prints "ready" once it consumes; when its stdin closes it flushes its
// acks, prints "done N T" (N acknowledged, the last at T, Unix ns) and
// exits 0. It exits 1 when its --timeout passes.
const rawConsumerCommand = "internal-raw-consumer"

type rawConsumerFlags struct {
	nats    natsFlags
	stream  string
	durable string
	timeout time.Duration
}

func runRawConsumer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f rawConsumerFlags
	fs := newFlagSet(rawConsumerCommand, &env{stderr: stderr})
	f.nats.registerClient(fs)
	fs.StringVar(&f.stream, "stream", "", "stream of the durable")
	fs.StringVar(&f.durable, "durable", "", "durable consumer to consume with")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "exit 1 after this")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := f.run(ctx, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "carddrift "+rawConsumerCommand+":", err)
		return 1
	}
	return exitOK
}

func (f *rawConsumerFlags) run(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	if f.stream == "" || f.durable == "" {
		return usagef("--stream and --durable are required")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("--timeout %s passed", f.timeout))
	defer cancel()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = context.Cause(ctx) // whichever step it interrupted
		}
	}()
	stdinClosed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(stdinClosed)
	}()
	nc, js, err := f.nats.jetStream("carddrift-bench-raw")
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := js.Consumer(ctx, f.stream, f.durable)
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", f.durable, f.stream, err)
	}
	var acked, last atomic.Int64
	cc, err := cons.Consume(func(m jetstream.Msg) {
		m.Ack()
		acked.Add(1)
		last.Store(time.Now().UnixNano())
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		return err
	}
	defer cc.Stop()
	fmt.Fprintln(stdout, "ready")
	select {
	case <-stdinClosed:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	// The acks are written; they leave this process before it says done.
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("flush the acks: %w", err)
	}
	fmt.Fprintln(stdout, "done", acked.Load(), last.Load())
	return nil
}

// rawProcess is a running raw consumer: the figure that started it ends it
// (finish, or kill on any error); its context's deadline kills it too.
type rawProcess struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.Closer
	lines  chan string // its stdout, line by line; closed at EOF
	stderr strings.Builder
}

// startRawConsumer starts this binary as the raw consumer of durable "raw"
// on stream, and waits until it consumes.
func startRawConsumer(ctx context.Context, nf *natsFlags, stream string, timeout time.Duration) (*rawProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("raw consumer: %w", err)
	}
	args := []string{rawConsumerCommand, "--stream", stream, "--durable", "raw", "--timeout", timeout.String(), "--nats-url", nf.url}
	for _, kv := range [][2]string{{"--creds", nf.creds}, {"--tls-cert", nf.tlsCert}, {"--tls-key", nf.tlsKey}, {"--tls-ca", nf.tlsCA}, {"--js-api-prefix", nf.apiPrefix}} {
		if kv[1] != "" {
			args = append(args, kv[0], kv[1])
		}
	}
	// A little more than the child's own timeout: it ends itself first.
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	p := &rawProcess{cmd: exec.CommandContext(ctx, exe, args...), cancel: cancel, lines: make(chan string, 4)}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	// The child's environment without CARDDRIFT_* (ff would read them as
	// its flags): what it needs is on its command line.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CARDDRIFT_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		cancel()
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("raw consumer: %w", err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	if _, err := p.expect(ctx, "ready"); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// expect waits for the next line of the child's stdout, which must start
// with word; it returns the rest of the line.
func (p *rawProcess) expect(ctx context.Context, word string) (string, error) {
	select {
	case line, ok := <-p.lines:
		if !ok {
			err := p.cmd.Wait()
			return "", fmt.Errorf("raw consumer exited before %q: %v: %s", word, err, strings.TrimSpace(p.stderr.String()))
		}
		rest, found := strings.CutPrefix(line, word)
		if !found {
			return "", fmt.Errorf("raw consumer said %q, want %q", line, word)
		}
		return strings.TrimSpace(rest), nil
	case <-ctx.Done():
		return "", fmt.Errorf("raw consumer: waiting for %q: %w", word, ctx.Err())
	}
}

// finish closes the raw consumer's stdin, waits for its "done n T" and its
// exit, and returns T and the CPU time the process used.
func (p *rawProcess) finish(ctx context.Context, n uint64) (last time.Time, cpu time.Duration, err error) {
	defer p.kill()
	p.stdin.Close()
	rest, err := p.expect(ctx, "done")
	if err != nil {
		return last, 0, err
	}
	var got uint64
	var ns int64
	if _, err := fmt.Sscan(rest, &got, &ns); err != nil || got != n {
		return last, 0, fmt.Errorf("raw consumer said done %q, want %d messages and a time", rest, n)
	}
	for range p.lines { // EOF: it is exiting
	}
	if err := p.cmd.Wait(); err != nil {
		return last, 0, fmt.Errorf("raw consumer: %w: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	st := p.cmd.ProcessState
	return time.Unix(0, ns), st.UserTime() + st.SystemTime(), nil
}

// kill ends the process if it still runs (its stdin closes, its context
// is cancelled: exec kills it) and releases its context; safe twice.
func (p *rawProcess) kill() {
	p.stdin.Close()
	p.cancel()
	if p.cmd.ProcessState == nil {
		p.cmd.Wait()
	}
}

// scratch is a stream of bench's own, CARDDRIFT_BENCH_<run> on
// carddrift.bench.<run>.>, with one durable pull consumer "raw".
type scratch struct {
	run, name, subject string
	drop               func() // deletes the stream
}

// newScratch creates a scratch stream with sc's storage and limits.
func newScratch(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) (scratch, error) {
	run := fmt.Sprint(time.Now().UnixNano())
	s := scratch{run: run, name: "CARDDRIFT_BENCH_" + run, subject: "carddrift.bench." + run}
	sc.Name, sc.Subjects = s.name, []string{s.subject + ".>"}
	st, err := js.CreateStream(ctx, sc)
	if err != nil {
		return scratch{}, fmt.Errorf("scratch stream: %w", err)
	}
	s.drop = func() { js.DeleteStream(context.WithoutCancel(ctx), s.name) }
	if _, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1000}); err != nil {
		s.drop()
		return scratch{}, err
	}
	return s, nil
}

var errRawEmpty = errors.New("the raw figure's traffic published no events")

// rawSide is one raw figure: the events acknowledged, the time from the
// first publish to the last ack, the raw consumer's CPU, and the cost.
type rawSide struct {
	events int64
	took   time.Duration
	cpu    time.Duration
	cost   *Cost
}

// runRaw takes one raw figure: publish sends its events under a scratch
// stream's subject; the figure ends once the raw consumer has acked them all.
func (f *benchFlags) runRaw(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, embedded bool,
	publish func(ctx context.Context, s scratch) error) (rawSide, error) {
	s, err := newScratch(ctx, js, sc)
	if err != nil {
		return rawSide{}, err
	}
	defer s.drop()
	proc, err := startRawConsumer(ctx, &f.nats, s.name, f.demo.duration+5*time.Minute)
	if err != nil {
		return rawSide{}, err
	}
	defer proc.kill()
	before := f.cost.read(ctx)
	start := time.Now()
	if err := publish(ctx, s); err != nil {
		return rawSide{}, err
	}
	st, err := js.Stream(ctx, s.name)
	if err != nil {
		return rawSide{}, err
	}
	n := st.CachedInfo().State.Msgs
	if n == 0 {
		return rawSide{}, errRawEmpty
	}
	if err := waitDrained(ctx, js, s.name, []string{"raw"}, 100*time.Millisecond, 5*time.Minute); err != nil {
		return rawSide{}, fmt.Errorf("the raw consumer: %w", err)
	}
	after := f.cost.read(ctx)
	last, cpu, err := proc.finish(ctx, n)
	if err != nil {
		return rawSide{}, err
	}
	return rawSide{events: int64(n), took: last.Sub(start), cpu: cpu, cost: f.cost.cost(before, after, int64(n), embedded)}, nil
}
