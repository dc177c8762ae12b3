package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store/natstest"
)

// TestMain lets this test binary stand in for carddrift when bench
// re-executes itself (os.Executable) for its raw consumer.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == rawConsumerCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// rawStream starts a JetStream server with stream name on subjects and its
// durable "raw", as the raw consumer's tests need them.
func rawStream(t *testing.T, name, subjects string) jetstream.JetStream {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	st, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: name, Subjects: []string{subjects}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrUpdateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	return js
}

// TestRawConsumerParentGone: the raw consumer exits when its stdin closes
// (its parent went away), and on its own --timeout.
func TestRawConsumerParentGone(t *testing.T) {
	js := rawStream(t, "RAWGONE", "rawgone.>")
	ctx := context.Background()
	url := js.Conn().ConnectedUrl()
	for _, tt := range []struct {
		name    string
		timeout string
		close   bool
		want    string
	}{
		{"stdin closed", "1m", true, errParentGone.Error()},
		{"timeout", "1s", false, "--timeout 1s passed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			out, errOut := &syncBuffer{}, &syncBuffer{}
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{rawConsumerCommand, "--nats-url", url, "--stream", "RAWGONE", "--durable", "raw",
					"--events", "10", "--timeout", tt.timeout}, stdinR, out, errOut)
			}()
			if tt.close {
				waitMatch(t, out, regexp.MustCompile(`ready`))
				stdinW.Close()
			}
			select {
			case code := <-done:
				if code != 1 || !strings.Contains(errOut.String(), tt.want) {
					t.Fatalf("raw consumer = %d, stderr %q; want 1 with %q", code, errOut.String(), tt.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("raw consumer still running 20s later")
			}
		})
	}
}

// benchJSON runs bench with args and decodes its report.
func benchJSON(t *testing.T, args ...string) BenchReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	if code := run(ctx, append([]string{"bench", "--json"}, args...), strings.NewReader(""), out, errOut); code != 0 {
		t.Fatalf("bench %v = %d:\n%s", args, code, errOut.String())
	}
	var rep BenchReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out.String())
	}
	return rep
}

// TestBenchEmbeddedServe: bench against serve's embedded server says so
// and runs its raw consumer as a process of its own.
func TestBenchEmbeddedServe(t *testing.T) {
	out, _, stop := serveInProcess(t, "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "127.0.0.1:0",
		"--partitions", "2", "--log-format", "json", "--log-level", "warn")
	defer stop()
	natsURL := waitMatch(t, out, regexp.MustCompile(`listening on (nats://\S+)`))[1]
	waitMatch(t, out, regexp.MustCompile(`consuming A2A_TASKS`))

	rep := benchJSON(t, "--nats-url", natsURL, "--throughput-only", "--events", "600", "--rounds", "2")
	tp := rep.Throughput
	if !tp.EmbeddedServer || tp.RawConsumer != rawOwnProcess {
		t.Errorf("embeddedServer %v, rawConsumer %q; want true, %q", tp.EmbeddedServer, tp.RawConsumer, rawOwnProcess)
	}
	if len(tp.Rounds) != 2 || tp.RawPerSecond <= 0 || tp.CarddriftPerSecond <= 0 {
		t.Errorf("rounds %+v, raw %v/s, carddrift %v/s", tp.Rounds, tp.RawPerSecond, tp.CarddriftPerSecond)
	}
}

// TestBenchStandaloneServer: against a server that is not serve's, bench
// says nothing of an embedded server; text output.
func TestBenchStandaloneServer(t *testing.T) {
	srv, _, _ := natstest.StartJetStream(t)
	out, _, stop := serveInProcess(t, "--nats-url", srv.ClientURL(), "--http-addr", "127.0.0.1:0",
		"--partitions", "2", "--log-format", "json", "--log-level", "warn")
	defer stop()
	waitMatch(t, out, regexp.MustCompile(`consuming A2A_TASKS`))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bout, berr := &syncBuffer{}, &syncBuffer{}
	if code := run(ctx, []string{"bench", "--nats-url", srv.ClientURL(), "--throughput-only", "--events", "600", "--rounds", "1"},
		strings.NewReader(""), bout, berr); code != 0 {
		t.Fatalf("bench = %d:\n%s", code, berr.String())
	}
	text := bout.String()
	want := []string{
		"the raw durable consumer runs as a process of its own",
		"round 1: raw",
		"median: raw ",
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("bench output lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "embedded") {
		t.Errorf("bench says embedded against a standalone server:\n%s", text)
	}
}

// serveDemoLeases runs serve in process with its embedded server, fetches
// to loopback and the demo's leases, until the test ends; it returns its
// NATS URL and its HTTP address once its workers consume.
func serveDemoLeases(t *testing.T) (natsURL, httpAddr string) {
	t.Helper()
	out, _, stop := serveInProcess(t, "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "127.0.0.1:0",
		"--fetch-allow", "127.0.0.0/8", "--partitions", "2", "--min-lease", "1s", "--default-lease", "2s", "--max-lease", "10s",
		"--full-fetch-interval", "10s", "--log-format", "json", "--log-level", "error")
	t.Cleanup(func() { stop() })
	natsURL = waitMatch(t, out, regexp.MustCompile(`listening on (nats://\S+)`))[1]
	httpAddr = waitMatch(t, out, regexp.MustCompile(`health on (http://[^/\s]+)/metrics`))[1]
	waitMatch(t, out, regexp.MustCompile(`consuming A2A_TASKS`))
	return natsURL, httpAddr
}

// TestSimulateJSON: simulate against serve names serve's fleet page
// first (on stderr with --json) and prints its scorecard as JSON.
func TestSimulateJSON(t *testing.T) {
	natsURL, httpAddr := serveDemoLeases(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sout, serr := &syncBuffer{}, &syncBuffer{}
	code := run(ctx, []string{"simulate", "--nats-url", natsURL, "--metrics-url", httpAddr + "/metrics", "--agents", "6",
		"--duration", "12s", "--settle", "2s", "--min-lease", "1s", "--default-lease", "2s", "--max-lease", "10s",
		"--full-fetch-interval", "10s", "--json"}, strings.NewReader(""), sout, serr)
	if code != exitOK && code != exitFindings {
		t.Fatalf("simulate = %d:\n%s", code, serr.String())
	}
	var doc struct {
		Events int64 `json:"events"`
		Tasks  int   `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(sout.String()), &doc); err != nil {
		t.Fatalf("simulate --json: %v\n%s", err, sout.String())
	}
	if doc.Events == 0 || doc.Tasks == 0 {
		t.Fatalf("simulate --json: %s: want the scorecard's tasks and events", sout.String())
	}
	if want := "carddrift simulate: the fleet as serve sees it: " + httpAddr + "/fleet\n"; !strings.HasPrefix(serr.String(), want) {
		t.Errorf("simulate --json's stderr does not start with %q:\n%.300s", want, serr.String())
	}
}

// TestBenchEmbeddedMode: --embedded builds serve's embedded arrangement in
// bench's process and measures the raw consumer both as a process of its
// own and inside the server's process, every round; it excludes
// --nats-url.
func TestBenchEmbeddedMode(t *testing.T) {
	rep := benchJSON(t, "--embedded", "--throughput-only", "--events", "500", "--rounds", "3")
	tp := rep.Throughput
	if !tp.EmbeddedServer || tp.RawPerSecond <= 0 || tp.CarddriftPerSecond <= 0 || tp.RawInProcessPerSecond <= 0 || tp.RatioInProcess <= 0 {
		t.Fatalf("throughput %+v: want an embedded server and every rate and both ratios", tp)
	}
	firsts := map[bool]int{}
	for i, r := range tp.Rounds {
		if r.RawInProcessPerSecond <= 0 {
			t.Errorf("round %d: %+v: want the in-process rate", i, r)
		}
		firsts[r.RawFirst]++
	}
	if firsts[true] != 1 || firsts[false] != 2 {
		t.Errorf("raw first in %d of 3 rounds, want 1 (the three sides take turns)", firsts[true])
	}
	if code, _, stderr := runCLI(t, "", "bench", "--embedded", "--nats-url", "nats://127.0.0.1:1"); code != exitUsage || !strings.Contains(stderr, "exclusive") {
		t.Errorf("bench --embedded --nats-url = %d, %q; want a usage error", code, stderr)
	}
}

// TestRawConsumerUntilStdinCloses: with --events 0 the raw consumer
// acknowledges until its stdin closes, then says how many and exits 0.
func TestRawConsumerUntilStdinCloses(t *testing.T) {
	js := rawStream(t, "RAWOPEN", "rawopen.>")
	ctx := context.Background()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{rawConsumerCommand, "--nats-url", js.Conn().ConnectedUrl(), "--stream", "RAWOPEN", "--durable", "raw",
			"--events", "0", "--timeout", "1m"}, stdinR, out, errOut)
	}()
	waitMatch(t, out, regexp.MustCompile(`ready`))
	for i := range 7 {
		if _, err := js.Publish(ctx, fmt.Sprintf("rawopen.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitDrained(ctx, js, "RAWOPEN", []string{"raw"}, 10*time.Millisecond, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		t.Fatalf("raw consumer exited (%d) before its stdin closed: %s", code, errOut.String())
	default:
	}
	stdinW.Close()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out.String(), "done 7") {
			t.Fatalf("raw consumer = %d, stdout %q, stderr %q; want 0 and done 7", code, out.String(), errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("raw consumer still running 20s after its stdin closed")
	}
}

// TestBenchDetectionOnly: bench --detection-only skips the throughput
// phase and reports the detection phase: its agents, tasks, events and
// fetches per lease; it excludes --throughput-only.
func TestBenchDetectionOnly(t *testing.T) {
	natsURL, _ := serveDemoLeases(t)

	rep := benchJSON(t, "--nats-url", natsURL, "--detection-only", "--agents", "6",
		"--duration", "8s", "--settle", "1s", "--min-lease", "1s", "--default-lease", "2s", "--max-lease", "10s", "--full-fetch-interval", "10s")
	if rep.Throughput != nil {
		t.Errorf("throughput %+v with --detection-only", rep.Throughput)
	}
	d := rep.Detection
	if d == nil || d.Agents != 6 || d.LifecycleEvents == 0 || d.Tasks == 0 || d.FetchesPerAgentPerLease <= 0 {
		t.Fatalf("detection %+v: want its agents, events, tasks and fetches per lease", d)
	}
	if code, _, stderr := runCLI(t, "", "bench", "--nats-url", natsURL, "--throughput-only", "--detection-only"); code != exitUsage || !strings.Contains(stderr, "exclusive") {
		t.Errorf("bench --throughput-only --detection-only = %d, %q; want a usage error", code, stderr)
	}
}
