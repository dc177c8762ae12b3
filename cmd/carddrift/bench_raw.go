package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// rawConsumerCommand is the hidden command bench runs, as a process of its
// own, for its raw figures: one durable pull consumer that consumes and
// acknowledges, so that they cross the same process boundary to the server
// as `carddrift serve --nats-url` does. It has no help file and is not in
// the usage: run dispatches it before parsing the commands.
//
//	carddrift internal-raw-consumer --nats-url URL --stream S --durable D --timeout T
//
// It prints "ready" once it consumes; when its stdin closes it flushes its
// acks, prints "done N T" (N messages acknowledged, the last at T, Unix
// nanoseconds) and exits 0. It exits 1 when its --timeout passes.
const rawConsumerCommand = "internal-raw-consumer"

type rawConsumerFlags struct {
	nats    natsFlags
	stream  string
	durable string
	timeout time.Duration
}

func (f *rawConsumerFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	fs.StringVar(&f.stream, "stream", "", "stream of the durable")
	fs.StringVar(&f.durable, "durable", "", "durable consumer to consume with")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "exit 1 after this")
}

// runRawConsumer runs the hidden command; it returns the exit status.
func runRawConsumer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f rawConsumerFlags
	fs := newFlagSet(rawConsumerCommand, &env{stderr: stderr})
	f.register(fs)
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

// rawProcess is a running raw consumer (rawConsumerCommand) that bench
// started: its owner is the figure that started it, which ends it (finish,
// or kill on any error); its context's deadline kills it too.
type rawProcess struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.Closer
	lines  chan string // its stdout, line by line; closed at EOF
	stderr strings.Builder
}

// startRawConsumer starts the raw consumer of durable "raw" on stream as a
// process of its own (this binary again), with bench's connection flags,
// and waits until it consumes.
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
// carddrift.bench.<run>.>, with one durable pull consumer "raw"
// (explicit acks, at most 1,000 pending): where the raw consumer's events
// go, apart from the deployment's streams.
type scratch struct {
	run, name, subject string
	drop               func() // deletes the stream
}

// newScratch creates a scratch stream; sc gives what it keeps of the
// lifecycle stream's configuration (storage, duplicate window), its name
// and subjects are the scratch's.
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

// errRawEmpty: a raw figure's publisher published nothing.
var errRawEmpty = errors.New("the raw figure's traffic published no events")

// rawSide is what one raw figure measured: the events the raw consumer
// acknowledged, the time from the first publish to its last
// acknowledgement, its own CPU, and the deployment's cost meanwhile.
type rawSide struct {
	events int64
	took   time.Duration
	cpu    time.Duration
	cost   *Cost
}

// runRaw takes one raw figure: on a scratch stream (sc: what it keeps of
// the lifecycle stream's configuration) consumed by the raw consumer, a
// process of its own, publish sends its events under the scratch's
// subject; the figure ends once the raw consumer has acknowledged them all.
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
