package store_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/store"
)

// TestMonitorReportsALimitThatBites: a lifecycle stream flooded past its
// limit is reported at the limit (gauges), counted as one limit hit, and
// logged once when it fills and once when it discards, however often it
// is checked.
func TestMonitorReportsALimitThatBites(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		ctx := t.Context()
		cfg := store.Config{StorageLimit: 24 << 20} // A2A_TASKS: 8 MiB
		if err := store.Provision(ctx, js, cfg); err != nil {
			t.Fatalf("Provision() error = %v", err)
		}
		var logs bytes.Buffer
		log := zerolog.New(&logs)
		reg := prometheus.NewPedanticRegistry()
		m, err := store.NewMonitor(js, cfg, store.MonitorOptions{Logger: &log, Registerer: reg})
		if err != nil {
			t.Fatalf("NewMonitor() error = %v", err)
		}
		if us, err := m.Check(ctx); err != nil || len(us) != 7 {
			t.Fatalf("Check() = %v, %v; want the usages of 7 streams", us, err)
		}
		payload := []byte(strings.Repeat("x", 32<<10))
		flood := func(from, n int) {
			for i := from; i < from+n; i++ {
				if _, err := js.Publish(ctx, fmt.Sprintf("a2a.task.status.t%d", i), payload); err != nil {
					t.Fatalf("Publish(%d) error = %v", i, err)
				}
			}
		}
		flood(0, 400) // 12.5 MiB into 8 MiB
		for range 3 {
			flood(1000, 50)
			us, err := m.Check(ctx)
			if err != nil {
				t.Fatalf("Check() error = %v", err)
			}
			limits := cfg
			limits.SetDefaults()
			for _, u := range us {
				if want := limits.Limits()[u.Stream]; u.Limit != want {
					t.Fatalf("%s limit = %d, want %d", u.Stream, u.Limit, want)
				}
				if u.Bytes > uint64(u.Limit) {
					t.Fatalf("%s holds %d bytes over its limit %d", u.Stream, u.Bytes, u.Limit)
				}
			}
		}
		if got := valueOf(t, reg, "carddrift_store_limit_bytes", "A2A_TASKS"); got != 8<<20 {
			t.Fatalf("carddrift_store_limit_bytes{stream=A2A_TASKS} = %v, want %d", got, 8<<20)
		}
		if got := valueOf(t, reg, "carddrift_store_bytes", "A2A_TASKS"); got < store.FullRatio*(8<<20) || got > 8<<20 {
			t.Fatalf("carddrift_store_bytes{stream=A2A_TASKS} = %v, want at the limit %d", got, 8<<20)
		}
		if got := valueOf(t, reg, "carddrift_store_limit_hits_total", "A2A_TASKS"); got != 1 {
			t.Fatalf("carddrift_store_limit_hits_total{stream=A2A_TASKS} = %v, want 1", got)
		}
		if got := valueOf(t, reg, "carddrift_store_limit_hits_total", "CARD_EVENTS"); got != 0 {
			t.Fatalf("carddrift_store_limit_hits_total{stream=CARD_EVENTS} = %v, want 0", got)
		}
		out := logs.String()
		if n := strings.Count(out, "stream at its byte limit"); n != 1 {
			t.Fatalf("limit log lines = %d, want 1:\n%s", n, out)
		}
		if n := strings.Count(out, "discarding its oldest messages"); n != 1 {
			t.Fatalf("discarding log lines = %d, want 1:\n%s", n, out)
		}
		if !strings.Contains(out, `"stream":"A2A_TASKS"`) {
			t.Fatalf("log lines do not name A2A_TASKS:\n%s", out)
		}
	})
}

// valueOf returns the value of metric name with stream=stream in reg.
func valueOf(t *testing.T, reg *prometheus.Registry, name, stream string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stream" && l.GetValue() == stream {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{stream=%q} in the registry", name, stream)
	return 0
}
