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
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/fleet"
)

// MixBaseline is what the measured traffic costs with no carddrift
// at all: the same fleet, seed, schedule, duration and task rate, published
// by the same simulated clients onto a scratch stream of the same server,
// which one raw durable consumer, a process of its own, consumes and
// acknowledges. It is the floor under the cost figure: the server's work
// for the clients' publishes and one consumer's deliveries and acks, and
// the cheapest consumer's own.
type MixBaseline struct {
	// Events is what the clients published (and the raw consumer
	// acknowledged).
	Events int64 `json:"events"`
	// RawCPUMsPer1000 is the raw consumer process's CPU per 1,000 events.
	RawCPUMsPer1000 float64 `json:"rawCpuMsPer1000Events"`
	// Cost is serve's and the standalone server's CPU over the baseline's
	// traffic: with an embedded server, serve's process carried the
	// server's work for it (its workers had nothing to do); with a
	// standalone one, serve's figure is its idle work.
	Cost *Cost `json:"cost"`
	// TotalMsPer1000 is the baseline's deployment-side CPU per 1,000
	// events: the raw consumer's, plus the server's (serve's process's
	// when the server is embedded in it). CarddriftTotalMsPer1000 is the
	// measured run's, counted alike: serve's, plus the standalone
	// server's. Ratio is CarddriftTotalMsPer1000 / TotalMsPer1000 (absent
	// when a figure was not read).
	TotalMsPer1000          *float64 `json:"totalCpuMsPer1000Events,omitempty"`
	CarddriftTotalMsPer1000 *float64 `json:"carddriftTotalCpuMsPer1000Events,omitempty"`
	Ratio                   *float64 `json:"ratio,omitempty"`
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

// mixBaseline plays the measured traffic again onto a scratch stream (the
// lifecycle stream's storage and duplicate window) that the raw consumer,
// a process of its own, consumes and acknowledges, and returns its cost.
// The fleet's agents serve their cards on loopback as in the measured run;
// nothing fetches them.
func mixBaseline(ctx context.Context, js jetstream.JetStream, f *rigFlags, lifecycle jetstream.StreamConfig, embedded bool) (*MixBaseline, error) {
	s, err := newScratch(ctx, js, jetstream.StreamConfig{Storage: lifecycle.Storage, Duplicates: lifecycle.Duplicates,
		MaxMsgSize: lifecycle.MaxMsgSize})
	if err != nil {
		return nil, err
	}
	defer s.drop()
	proc, err := startRawConsumer(ctx, f, s.name, f.duration+5*time.Minute)
	if err != nil {
		return nil, err
	}
	defer proc.kill()
	fl, err := fleet.New(fleet.Options{Agents: f.agents, Seed: f.seed})
	if err != nil {
		return nil, err
	}
	if err := fl.Start(ctx); err != nil {
		return nil, err
	}
	defer fl.Close()
	sched, err := fleet.ScheduleShare(f.seed, fl.Agents(), nil, f.duration, f.driftShare)
	if err != nil {
		return nil, err
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
		Duration: f.duration, Seed: f.seed, TaskEvery: f.taskEvery, Spanning: true, TaskPrefix: "baseline-",
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
	if err := waitDrained(ctx, js, s.name, []string{"raw"}, 10*time.Millisecond); err != nil {
		return nil, fmt.Errorf("baseline: the raw consumer: %w", err)
	}
	after := f.cost.read(ctx)
	cpu, err := proc.finish(ctx, int(n))
	if err != nil {
		return nil, err
	}
	b := &MixBaseline{Events: int64(n), RawCPUMsPer1000: 1e6 * cpu.Seconds() / float64(n),
		Cost: f.cost.cost(before, after, int64(n), embedded)}
	return b, nil
}

// scratch is a stream of the rig's own, CARDDRIFT_BENCH_<run> on
// carddrift.bench.<run>.>, with one durable pull consumer "raw" (explicit
// acks, at most 1,000 pending): where the baseline's events go, apart from
// the deployment's streams.
type scratch struct {
	name, subject string
	drop          func() // deletes the stream
}

// newScratch creates a scratch stream; sc gives what it keeps of the
// lifecycle stream's configuration (storage, duplicate window), its name
// and subjects are the scratch's.
func newScratch(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) (scratch, error) {
	run := fmt.Sprint(time.Now().UnixNano())
	s := scratch{name: "CARDDRIFT_BENCH_" + run, subject: "carddrift.bench." + run}
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

// rawProcess is a running raw consumer: `carddrift internal-raw-consumer
// --events 0` (bench's, a process of its own), which acknowledges until its
// stdin closes, then prints "done N". Its owner is mixBaseline, which
// ends it (finish, or kill on any error); its context's deadline kills it
// too.
type rawProcess struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.Closer
	lines  chan string // its stdout, line by line; closed at EOF
	stderr strings.Builder
}

// startRawConsumer starts the raw consumer of the durable "raw" on stream
// and waits until it consumes.
func startRawConsumer(ctx context.Context, f *rigFlags, stream string, timeout time.Duration) (*rawProcess, error) {
	args := []string{"internal-raw-consumer", "--stream", stream, "--durable", "raw",
		"--events", "0", "--timeout", timeout.String(), "--nats-url", f.natsURL}
	if f.creds != "" {
		args = append(args, "--creds", f.creds)
	}
	// A little more than the child's own timeout: it ends itself first.
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	p := &rawProcess{cmd: exec.CommandContext(ctx, f.carddrift, args...), cancel: cancel, lines: make(chan string, 4)}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	// Without CARDDRIFT_* (carddrift reads them as its flags).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CARDDRIFT_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	p.stdin = stdin
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

// finish tells the raw consumer the traffic is over (its stdin closes),
// waits for its "done n" (n: what it must have acknowledged) and its exit,
// and returns the CPU time it used.
func (p *rawProcess) finish(ctx context.Context, n int) (time.Duration, error) {
	p.stdin.Close()
	defer p.kill()
	rest, err := p.expect(ctx, "done")
	if err != nil {
		return 0, err
	}
	if rest != strconv.Itoa(n) {
		return 0, fmt.Errorf("raw consumer acknowledged %s messages, want %d", rest, n)
	}
	for range p.lines { // EOF: it is exiting
	}
	if err := p.cmd.Wait(); err != nil {
		return 0, fmt.Errorf("raw consumer: %w: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	st := p.cmd.ProcessState
	return st.UserTime() + st.SystemTime(), nil
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

// compare fills the totals and the ratio against the measured run's
// cost c.
func (b *MixBaseline) compare(c *Cost) {
	raw := b.RawCPUMsPer1000
	if base := baselineTotal(b.Cost); base != nil {
		t := *base + raw
		b.TotalMsPer1000 = &t
	}
	b.CarddriftTotalMsPer1000 = sideTotal(c)
	if b.TotalMsPer1000 != nil && b.CarddriftTotalMsPer1000 != nil && *b.TotalMsPer1000 > 0 {
		r := *b.CarddriftTotalMsPer1000 / *b.TotalMsPer1000
		b.Ratio = &r
	}
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
	fmt.Fprintf(w, "baseline: the same traffic again (fleet, seed, schedule, duration) onto a scratch stream of the same server,\n"+
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
