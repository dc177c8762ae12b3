package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/test/internal/rig"
)

func TestSlope(t *testing.T) {
	tests := []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"flat", []float64{0, 0.5, 1}, []float64{7, 7, 7}, 0},
		{"a line", []float64{0, 0.25, 0.5, 1}, []float64{10, 15, 20, 30}, 20},
		{"noise around a line", []float64{0, 1, 2, 3}, []float64{1, 2, 2, 3}, 0.6},
		{"one point", []float64{1}, []float64{5}, 0},
		{"one x", []float64{1, 1}, []float64{5, 6}, 0},
		{"none", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slope(tt.xs, tt.ys); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("slope(%v, %v) = %v, want %v", tt.xs, tt.ys, got, tt.want)
			}
		})
	}
}

// TestSummarize: a series that grows to a limit and stays there has a
// positive slope over the soak and none over its second half; one that
// grows steadily keeps its slope; a series missing from some samples is
// summarized over those that have it.
func TestSummarize(t *testing.T) {
	var samples []SoakSample
	for m := 0; m <= 60; m += 10 {
		v := map[string]float64{"steady": float64(m) * 2, "capped": math.Min(float64(m), 20)}
		if m%20 == 0 {
			v["sometimes"] = 1
		}
		samples = append(samples, SoakSample{Minutes: float64(m), Values: v})
	}
	got := summarize(samples)
	want := []SoakSeries{
		{Name: "capped", First: 0, Last: 20, Min: 0, Max: 20, Samples: 7},
		{Name: "sometimes", First: 1, Last: 1, Min: 1, Max: 1, Samples: 4},
		{Name: "steady", First: 0, Last: 120, Min: 0, Max: 120, PerHour: 120, PerHourSecondHalf: 120, Samples: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("summarize = %+v, want %d series", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name == "capped" {
			if g.PerHour <= 0 || g.PerHourSecondHalf != 0 {
				t.Errorf("capped: slope %v, second half %v; want > 0 and 0", g.PerHour, g.PerHourSecondHalf)
			}
			g.PerHour, g.PerHourSecondHalf = 0, 0
		}
		g.PerHour, g.PerHourSecondHalf = math.Round(g.PerHour*1e6)/1e6, math.Round(g.PerHourSecondHalf*1e6)/1e6
		if g != w {
			t.Errorf("summarize[%d] = %+v, want %+v", i, g, w)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	page := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 113
go_goroutines_other 5
process_resident_memory_bytes 3.5753984e+07
carddrift_fetches_total{result="200"} 12
carddrift_events_total{outcome="ok",type="a2a.task.status"} 40
carddrift_events_total{outcome="ok",type="a2a.task.request"} 2 1700000000000
`
	got, err := parseMetrics(strings.NewReader(page), []string{"go_goroutines", "process_resident_memory_bytes", "carddrift_events_total"})
	if err != nil || got["go_goroutines"] != 113 || got["process_resident_memory_bytes"] != 35753984 || got["carddrift_events_total"] != 42 || len(got) != 3 {
		t.Fatalf("parseMetrics = %v, %v", got, err)
	}
	got, err = parseMetrics(strings.NewReader(page), []string{"go_goroutines", "process_open_fds"})
	if err == nil || !strings.Contains(err.Error(), "process_open_fds") || got["go_goroutines"] != 113 {
		t.Fatalf("parseMetrics with a missing series = %v, %v; want the rest and an error naming it", got, err)
	}
}

// TestSoak runs the soak against `carddrift serve` (built from
// cmd/carddrift, on its embedded server) for CARDDRIFT_SOAK (a duration,
// say 2m; unset: skipped, not part of the default suite): two rounds or
// more, samples with every series, no failed reading, no missed drift.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("CARDDRIFT_SOAK"))
	if err != nil {
		t.Skip("set CARDDRIFT_SOAK to a duration (e.g. 2m) to soak serve")
	}
	lease := []string{"-min-lease", "1s", "-default-lease", "2s", "-max-lease", "10s", "-full-fetch-interval", "10s"}
	serve := rig.StartServe(t, lease...)
	samples := t.TempDir() + "/samples.jsonl"
	var stdout, stderr strings.Builder
	code := run(t.Context(), append([]string{"-nats-url", serve.NATSURL, "-metrics-url", serve.HTTPAddr + "/metrics",
		"-agents", "40", "-duration", d.String(), "-round", (d / 2).String(), "-sample-every", (d / 6).String(),
		"-out", samples}, lease...), &stdout, &stderr)
	t.Logf("%s", stdout.String())
	if code != 0 {
		t.Fatalf("soak exited %d: %s", code, stderr.String())
	}
	for _, want := range []string{"round 2 ", "process_resident_memory_bytes", "stream.KV_carddrift-pins.subjects", "go_goroutines", "process_open_fds", "missed 0"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("soak printed no %q", want)
		}
	}
	if strings.Contains(stdout.String(), "problem:") || strings.Contains(stdout.String(), "failed:") {
		t.Errorf("soak failed a reading")
	}
	b, err := os.ReadFile(samples)
	if n := strings.Count(string(b), "\n"); err != nil || n < 6 {
		t.Errorf("-out has %d lines (%v), want at least 6", n, err)
	}
}
