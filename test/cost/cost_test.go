package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/carddrift/carddrift/test/internal/rig"
)

// burn spends some CPU.
func burn() {
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	runtime.KeepAlive(x)
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name, line string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "42 (nats-server) S 1 42 42 0 -1 4194560 1 0 0 0 250 130 0 0 20 0 12 0 100 0 0", 3800 * time.Millisecond, false},
		{"parentheses and spaces in the name", "7 (a) (b c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 0 0", 30 * time.Millisecond, false},
		{"no name", "7 a R 1", 0, true},
		{"too short", "7 (a) R 1 2 3", 0, true},
		{"not a number", "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 2 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat(tt.line)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseProcStat(%q) = %v, %v; want %v, error %v", tt.line, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestProcessCPU: this process's CPU read from /proc and from a real
// /metrics page (the process collector serve registers) grow as it works
// and agree; the load average reads.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		_, err := procCPU(os.Getpid())
		if !errors.Is(err, errNoProc) {
			t.Fatalf("procCPU off Linux = %v, want errNoProc", err)
		}
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx := context.Background()

	p0, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	m0, err := metricsCPU(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	burn()
	p1, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	m1, err := metricsCPU(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
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
	l, err := rig.LoadAvg()
	if err != nil || l[0] < 0 {
		t.Errorf("loadAvg() = %v, %v", l, err)
	}
}

// TestCost runs the rig against `carddrift serve` (built from
// cmd/carddrift, on its embedded server): serve's CPU per 1,000 lifecycle
// events of the fleet's mix, read from its /metrics, and the baseline —
// the same traffic again into carddrift's raw consumer (a process of its
// own) on a scratch stream that the rig deletes after: its events, the raw
// consumer's CPU, serve's process's (the embedded server's work) and the
// ratio of the two sides.
func TestCost(t *testing.T) {
	lease := []string{"-min-lease", "1s", "-default-lease", "2s", "-max-lease", "10s", "-full-fetch-interval", "10s"}
	serve := rig.StartServe(t, append([]string{"--partitions", "2"}, lease...)...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	code := run(ctx, append([]string{"-nats-url", serve.NATSURL, "-metrics-url", serve.HTTPAddr + "/metrics", "-carddrift", serve.Bin,
		"-agents", "6", "-duration", "8s", "-settle", "1s", "-json"}, lease...), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("cost = %d:\n%s", code, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("cost -json: %v\n%s", err, stdout.String())
	}
	c, b := rep.Cost, rep.Baseline
	if rep.Events == 0 || c == nil || c.Events != rep.Events || !c.Embedded {
		t.Fatalf("events %d, cost %+v: want the scorecard's events, an embedded server", rep.Events, c)
	}
	if c.ServeCPUMsPer1000 == nil || *c.ServeCPUMsPer1000 <= 0 || c.ServeCPUSeconds == nil {
		t.Errorf("cost %+v: want serve's CPU read, above zero", c)
	}
	if c.ServerCPUMsPer1000 != nil || c.NotRead["server"] != "" {
		t.Errorf("cost %+v: an embedded server's CPU is serve's; nothing else to read", c)
	}
	if b == nil || b.Events == 0 || b.RawCPUMsPer1000 <= 0 || b.Cost == nil || !b.Cost.Embedded || b.Cost.Events != b.Events {
		t.Fatalf("baseline %+v: want events, the raw consumer's CPU and serve's embedded server's cost of the same events", b)
	}
	// The same seed and duration publish about as many events: the traffic
	// is the measured run's.
	if lo, hi := rep.Events/2, rep.Events*2; b.Events < lo || b.Events > hi {
		t.Errorf("baseline %d events, the run %d: not the same traffic", b.Events, rep.Events)
	}
	if b.Ratio == nil || b.TotalMsPer1000 == nil || b.CarddriftTotalMsPer1000 == nil ||
		*b.TotalMsPer1000 != *b.Cost.ServeCPUMsPer1000+b.RawCPUMsPer1000 || *b.CarddriftTotalMsPer1000 != *c.ServeCPUMsPer1000 {
		t.Errorf("baseline %+v: want the totals (serve's process plus the raw consumer; serve's) and their ratio", b)
	}
	nc, err := nats.Connect(serve.NATSURL)
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
	c.write(&buf, "lifecycle events")
	b.write(&buf)
	for _, w := range []string{"ms per 1,000 (its embedded NATS server's included)", "baseline: the same traffic again", "raw consumer's CPU: ",
		"serve's process (its embedded server's work for the traffic; its workers idle): ", "× the baseline"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("cost lines lack %q:\n%s", w, buf.String())
		}
	}
}
