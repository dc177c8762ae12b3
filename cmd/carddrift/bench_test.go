package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

// burn spends some CPU.
func burn() {
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	runtime.KeepAlive(x)
}

// TestProcessCPU: this process's CPU read from /proc and from a real
// /metrics page (the process collector serve registers) grow as it works
// and agree; the load average reads.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := procCPU(os.Getpid()); err == nil {
			t.Fatal("procCPU off Linux: no error")
		}
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx := context.Background()

	read := func() (proc, metrics time.Duration) {
		p, err := procCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		m, err := metricsCPU(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return p, m
	}
	p0, m0 := read()
	burn()
	p1, m1 := read()
	if p1 <= p0 || m1 <= m0 {
		t.Fatalf("CPU did not grow: /proc %v → %v, /metrics %v → %v", p0, p1, m0, m1)
	}
	// Both read the same counters of the same process, a little apart.
	if d := (m1 - p1).Abs(); d > 200*time.Millisecond {
		t.Errorf("/metrics says %v, /proc %v: want them within 200ms", m1, p1)
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Error("procCPU of a pid that does not exist: no error")
	}
	if _, err := metricsCPU(ctx, srv.URL+"/nope"); err != nil {
		// promhttp serves any path; a page without the metric is the case below.
		t.Logf("metricsCPU(/nope) = %v", err)
	}
	if _, err := parseMetricsCPU(strings.NewReader("# no metrics\ngo_goroutines 7\n")); !errors.Is(err, errNoCPUMetric) {
		t.Errorf("parseMetricsCPU of a page without it = %v, want errNoCPUMetric", err)
	}
	l, err := loadAvg()
	if err != nil || l[0] < 0 {
		t.Errorf("loadAvg() = %v, %v", l, err)
	}
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

// TestRawConsumer: the raw consumer acknowledges until its stdin closes,
// then says how many and when the last was, and exits 0; it exits 1 on
// its own --timeout.
func TestRawConsumer(t *testing.T) {
	js := rawStream(t, "RAWOPEN", "rawopen.>")
	ctx := context.Background()
	start := func(timeout string) (*syncBuffer, *syncBuffer, *io.PipeWriter, chan int) {
		stdinR, stdinW := io.Pipe()
		t.Cleanup(func() { stdinW.Close() })
		out, errOut := &syncBuffer{}, &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{rawConsumerCommand, "--nats-url", js.Conn().ConnectedUrl(), "--stream", "RAWOPEN", "--durable", "raw",
				"--timeout", timeout}, stdinR, out, errOut)
		}()
		waitMatch(t, out, regexp.MustCompile(`ready`))
		return out, errOut, stdinW, done
	}
	out, errOut, stdin, done := start("1m")
	before := time.Now()
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
	stdin.Close()
	select {
	case code := <-done:
		var n int
		var last int64
		_, err := fmt.Sscanf(out.String(), "ready\ndone %d %d\n", &n, &last)
		if code != 0 || err != nil || n != 7 || time.Unix(0, last).Before(before) || time.Unix(0, last).After(time.Now()) {
			t.Fatalf("raw consumer = %d, stdout %q (%v), stderr %q; want 0 and done 7 with the time of the last ack", code, out.String(), err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("raw consumer still running 20s after its stdin closed")
	}

	_, errOut, _, done = start("1s")
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errOut.String(), "--timeout 1s passed") {
			t.Fatalf("raw consumer = %d, stderr %q; want 1 with its timeout", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("raw consumer still running 20s after its timeout")
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

// TestBenchEmbeddedServe: bench against serve's embedded server says so,
// runs its raw consumer as a process of its own and reads serve's CPU
// from its /metrics.
func TestBenchEmbeddedServe(t *testing.T) {
	out, _, stop := serveInProcess(t, "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "127.0.0.1:0",
		"--partitions", "2", "--log-format", "json", "--log-level", "warn")
	defer stop()
	natsURL := waitMatch(t, out, regexp.MustCompile(`listening on (nats://\S+)`))[1]
	httpAddr := waitMatch(t, out, regexp.MustCompile(`health on (http://[^/\s]+)/metrics`))[1]
	waitMatch(t, out, regexp.MustCompile(`consuming A2A_TASKS`))

	rep := benchJSON(t, "--nats-url", natsURL, "--metrics-url", httpAddr+"/metrics", "--throughput-only", "--events", "600", "--rounds", "2")
	tp := rep.Throughput
	if !tp.EmbeddedServer || tp.RawConsumer != rawOwnProcess {
		t.Errorf("embeddedServer %v, rawConsumer %q; want true, %q", tp.EmbeddedServer, tp.RawConsumer, rawOwnProcess)
	}
	if len(tp.Rounds) != 2 || tp.RawPerSecond <= 0 || tp.CarddriftPerSecond <= 0 {
		t.Errorf("rounds %+v, raw %v/s, carddrift %v/s", tp.Rounds, tp.RawPerSecond, tp.CarddriftPerSecond)
	}
	for i, r := range tp.Rounds {
		if r.ServeCPUMsPer1000 == nil || r.RawCPUMsPer1000 == nil || *r.RawCPUMsPer1000 <= 0 {
			t.Errorf("round %d: serve CPU %v, raw CPU %v; want both read, the raw consumer's above zero", i, r.ServeCPUMsPer1000, r.RawCPUMsPer1000)
		}
		if r.ServerCPUMsPer1000Carddrift != nil {
			t.Errorf("round %d: a server CPU figure without --nats-server-pid", i)
		}
	}
	c := tp.CPU
	if c.ServeCPUMsPer1000 == nil || c.RawCPUMsPer1000 == nil || c.ServeSource != httpAddr+"/metrics process_cpu_seconds_total" {
		t.Errorf("cpu %+v: want the medians and serve's source", c)
	}
	if _, ok := c.NotRead["server"]; ok {
		t.Errorf("cpu.notRead %v: the embedded server's CPU is serve's, nothing is missing", c.NotRead)
	}
	if runtime.GOOS == "linux" && (c.LoadBefore == nil || c.LoadAfter == nil) {
		t.Errorf("cpu: no load average: %+v", c)
	}
}

// TestBenchStandaloneServer: against a server that is not serve's, bench
// says nothing of an embedded server and reports the server's CPU beside
// serve's (the server runs in this test's process, so its pid is ours);
// text output.
func TestBenchStandaloneServer(t *testing.T) {
	srv, _, _ := natstest.StartJetStream(t)
	out, _, stop := serveInProcess(t, "--nats-url", srv.ClientURL(), "--http-addr", "127.0.0.1:0",
		"--partitions", "2", "--log-format", "json", "--log-level", "warn")
	defer stop()
	httpAddr := waitMatch(t, out, regexp.MustCompile(`health on (http://[^/\s]+)/metrics`))[1]
	waitMatch(t, out, regexp.MustCompile(`consuming A2A_TASKS`))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bout, berr := &syncBuffer{}, &syncBuffer{}
	if code := run(ctx, []string{"bench", "--nats-url", srv.ClientURL(), "--metrics-url", httpAddr + "/metrics",
		"--nats-server-pid", fmt.Sprint(os.Getpid()), "--throughput-only", "--events", "600", "--rounds", "1"},
		strings.NewReader(""), bout, berr); code != 0 {
		t.Fatalf("bench = %d:\n%s", code, berr.String())
	}
	text := bout.String()
	want := []string{
		"the raw durable consumer runs as a process of its own",
		"round 1: raw",
		"CPU per 1,000 events (medians): serve ",
		"raw consumer process ",
	}
	if runtime.GOOS == "linux" {
		want = append(want, fmt.Sprintf("NATS server's CPU per 1,000 events (/proc/%d/stat): ", os.Getpid()), "load average (1, 5, 15 min): before ")
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

// TestSimulateCost: simulate against serve prints serve's CPU per 1,000
// lifecycle events after its scorecard, and adds "cost" to its JSON.
func TestSimulateCost(t *testing.T) {
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
		Cost   *Cost `json:"cost"`
	}
	if err := json.Unmarshal([]byte(sout.String()), &doc); err != nil {
		t.Fatalf("simulate --json: %v\n%s", err, sout.String())
	}
	c := doc.Cost
	if doc.Events == 0 || c == nil || c.Events != doc.Events || !c.Embedded {
		t.Fatalf("events %d, cost %+v: want the scorecard's events, an embedded server", doc.Events, c)
	}
	if c.ServeCPUMsPer1000 == nil || *c.ServeCPUMsPer1000 <= 0 || c.ServeCPUSeconds == nil {
		t.Errorf("cost %+v: want serve's CPU read, above zero", c)
	}
	if want := "carddrift simulate: the fleet as serve sees it: " + httpAddr + "/fleet\n"; !strings.HasPrefix(serr.String(), want) {
		t.Errorf("simulate --json's stderr does not start with %q:\n%.300s", want, serr.String())
	}
	if c.ServerCPUMsPer1000 != nil || c.NotRead["server"] != "" {
		t.Errorf("cost %+v: an embedded server's CPU is serve's; nothing else to read", c)
	}
	var buf strings.Builder
	c.write(&buf, "lifecycle events")
	if !strings.Contains(buf.String(), "ms per 1,000 (its embedded NATS server's included)") {
		t.Errorf("cost lines:\n%s", buf.String())
	}
}

// TestBenchMixBaseline: bench --detection-only skips the throughput phase,
// and after the detection phase plays its traffic again into the raw
// consumer (a process of its own) on a scratch stream that it deletes
// after: the baseline's events, the raw consumer's CPU, serve's process's
// (the embedded server's work) and the ratio of the two sides.
func TestBenchMixBaseline(t *testing.T) {
	natsURL, httpAddr := serveDemoLeases(t)

	rep := benchJSON(t, "--nats-url", natsURL, "--metrics-url", httpAddr+"/metrics", "--detection-only", "--agents", "6",
		"--duration", "8s", "--settle", "1s", "--min-lease", "1s", "--default-lease", "2s", "--max-lease", "10s", "--full-fetch-interval", "10s")
	if rep.Throughput != nil {
		t.Errorf("throughput %+v with --detection-only", rep.Throughput)
	}
	d := rep.Detection
	if d == nil || d.Cost == nil || d.Baseline == nil {
		t.Fatalf("detection %+v: want its cost and its baseline", d)
	}
	b := d.Baseline
	if b.Events == 0 || b.RawCPUMsPer1000 <= 0 || b.Cost == nil || !b.Cost.Embedded || b.Cost.Events != b.Events {
		t.Fatalf("baseline %+v (cost %+v): want events, the raw consumer's CPU and serve's embedded server's cost of the same events", b, b.Cost)
	}
	// The same seed and duration publish about as many events: the traffic
	// is the detection phase's.
	if lo, hi := d.LifecycleEvents/2, d.LifecycleEvents*2; b.Events < lo || b.Events > hi {
		t.Errorf("baseline %d events, detection %d: not the same traffic", b.Events, d.LifecycleEvents)
	}
	if b.Ratio == nil || b.TotalMsPer1000 == nil || b.CarddriftTotalMsPer1000 == nil ||
		*b.TotalMsPer1000 != *b.Cost.ServeCPUMsPer1000+b.RawCPUMsPer1000 || *b.CarddriftTotalMsPer1000 != *d.Cost.ServeCPUMsPer1000 {
		t.Errorf("baseline %+v: want the totals (serve's process plus the raw consumer; serve's) and their ratio", b)
	}
	// The efficient publisher replays exactly the detection phase's stored
	// lifecycle messages, and the bars are the figures' quotients.
	ef := d.Efficient
	if ef == nil || ef.Events != d.LifecycleEvents || ef.RawCPUMsPer1000 <= 0 || ef.TotalMsPer1000 == nil ||
		*ef.TotalMsPer1000 != *ef.Cost.ServeCPUMsPer1000+ef.RawCPUMsPer1000 {
		t.Fatalf("efficient %+v: want the detection phase's %d events, the raw consumer's CPU and the total", ef, d.LifecycleEvents)
	}
	r := d.Ratios
	if r == nil || r.Deployment == nil || *r.Deployment != *b.CarddriftTotalMsPer1000 / *ef.TotalMsPer1000 ||
		r.Emitter == nil || *r.Emitter != *b.TotalMsPer1000 / *ef.TotalMsPer1000 || r.Serve != nil ||
		r.DeploymentEventsPerCoreS == nil || *r.DeploymentEventsPerCoreS != 1e6 / *b.CarddriftTotalMsPer1000 {
		t.Errorf("ratios %+v: want the deployment's and the emitter's bars (serve's own needs a standalone server) and events per core-second", r)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for name := range js.StreamNames(context.Background()).Name() {
		if strings.HasPrefix(name, "CARDDRIFT_BENCH_") {
			t.Errorf("scratch stream %s left behind", name)
		}
	}
	var buf strings.Builder
	b.write(&buf)
	for _, w := range []string{"baseline: the detection phase's traffic again", "raw consumer's CPU: ",
		"serve's process (its embedded server's work for the traffic; its workers idle): ", "× the baseline"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("baseline lines lack %q:\n%s", w, buf.String())
		}
	}
	if code, _, stderr := runCLI(t, "", "bench", "--nats-url", natsURL, "--throughput-only", "--detection-only"); code != exitUsage || !strings.Contains(stderr, "exclusive") {
		t.Errorf("bench --throughput-only --detection-only = %d, %q; want a usage error", code, stderr)
	}
}
