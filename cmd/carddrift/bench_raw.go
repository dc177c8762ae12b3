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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// rawConsumerCommand is the hidden command bench runs, as a process of its
// own, for its raw baseline: one durable pull consumer that consumes and
// acknowledges, so that the baseline crosses the same process boundary to
// the server as `carddrift serve --nats-url` does. It is not a public
// command (no help file, not in the usage): run dispatches it before
// parsing the commands.
//
//	carddrift internal-raw-consumer --nats-url URL --stream S --durable D --events N --timeout T
//
// It prints "ready" once it consumes and "done N" once it has acknowledged
// N messages and flushed the acks, then exits 0. It exits 1 when its
// --timeout passes, and when its stdin closes (its parent went away).
// With --events 0 it consumes until its stdin closes, then flushes its
// acks, prints "done N" (N: what it acknowledged) and exits 0: bench's
// baseline of the fleet's mix, whose count is known only at the end.
const rawConsumerCommand = "internal-raw-consumer"

// rawConsumerFlags are the hidden command's flags.
type rawConsumerFlags struct {
	nats    natsFlags
	stream  string
	durable string
	events  int
	timeout time.Duration
}

func (f *rawConsumerFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	fs.StringVar(&f.stream, "stream", "", "stream of the durable")
	fs.StringVar(&f.durable, "durable", "", "durable consumer to consume with")
	fs.IntVar(&f.events, "events", 0, "acknowledge this many messages, then exit (0: until stdin closes)")
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

// errParentGone: the raw consumer's stdin closed before it was done.
var errParentGone = errors.New("stdin closed: the parent went away")

// run connects, consumes and acknowledges --events messages, and reports
// on stdout.
func (f *rawConsumerFlags) run(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	if f.stream == "" || f.durable == "" || f.events < 0 {
		return usagef("--stream and --durable are required, --events at least 0")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("--timeout %s passed", f.timeout))
	defer cancel()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = context.Cause(ctx) // whichever step it interrupted
		}
	}()
	parentGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(parentGone)
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
	var acked atomic.Int64
	done := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		m.Ack()
		if acked.Add(1) == int64(f.events) {
			close(done)
		}
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		return err
	}
	defer cc.Stop()
	fmt.Fprintln(stdout, "ready")
	select {
	case <-done:
	case <-parentGone:
		if f.events > 0 {
			return errParentGone
		}
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	// The acks are written; they leave this process before it says done.
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("flush the acks: %w", err)
	}
	fmt.Fprintln(stdout, "done", acked.Load())
	return nil
}

// rawProcess is a running raw consumer (rawConsumerCommand) that bench
// started: its owner is the bench round that started it, which ends it
// (wait, or kill on any error); its context's deadline kills it too.
type rawProcess struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.Closer
	lines  chan string // its stdout, line by line; closed at EOF
	stderr strings.Builder
}

// startRawConsumer starts the raw consumer of n messages of durable on
// stream as a process of its own (this binary again), with bench's
// connection flags, and waits until it consumes.
func startRawConsumer(ctx context.Context, nf *natsFlags, stream, durable string, n int, timeout time.Duration) (*rawProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("raw consumer: %w", err)
	}
	args := []string{rawConsumerCommand, "--stream", stream, "--durable", durable,
		"--events", strconv.Itoa(n), "--timeout", timeout.String(), "--nats-url", nf.url}
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

// wait waits for "done n" and for the process to exit; it returns the
// CPU time the process used.
func (p *rawProcess) wait(ctx context.Context, n int) (time.Duration, error) {
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

// finish tells a raw consumer started with n = 0 (consume until stdin
// closes) that the traffic is over, and waits as wait does for its "done
// n": n is what it must have acknowledged.
func (p *rawProcess) finish(ctx context.Context, n int) (time.Duration, error) {
	p.stdin.Close()
	return p.wait(ctx, n)
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
