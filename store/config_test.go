package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/topology"
)

func TestDefaultConfig(t *testing.T) {
	c := store.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	for _, tc := range []struct {
		field     string
		got, want any
	}{
		{"LifecycleStream", c.LifecycleStream, "A2A_TASKS"},
		{"LifecycleSubjects", c.LifecycleSubjects, "a2a.task.>"},
		{"EventsStream", c.EventsStream, "CARD_EVENTS"},
		{"EventsSubjects", c.EventsSubjects, "card.>"},
		{"EventsDuplicates", c.EventsDuplicates, 2 * time.Minute},
		{"DLQStream", c.DLQStream, "CARDDRIFT_DLQ"},
		{"DLQSubjects", c.DLQSubjects, "carddrift.dlq.>"},
		{"PinsBucket", c.PinsBucket, "carddrift-pins"},
		{"PinsTTL", c.PinsTTL, 24 * time.Hour},
		{"CardsBucket", c.CardsBucket, "carddrift-cards"},
		{"CardsObjectBucket", c.CardsObjectBucket, "carddrift-cards-large"},
		{"CardsMaxValueSize", c.CardsMaxValueSize, int32(1 << 20)},
		{"CardsInlineMax", c.CardsInlineMax, 1<<20 - store.InlineHeadroom},
		{"LeasesBucket", c.LeasesBucket, "carddrift-leases"},
		{"Replicas", c.Replicas, 1},
		{"Storage", c.Storage, jetstream.FileStorage},
		{"ConsumerName", c.ConsumerName, "carddrift-worker"},
		{"AckWait", c.AckWait, 30 * time.Second},
		{"MaxDeliver", c.MaxDeliver, 10},
		{"Partitions", c.Partitions, 0},
	} {
		if tc.got != tc.want {
			t.Errorf("DefaultConfig().%s = %v, want %v", tc.field, tc.got, tc.want)
		}
	}
}

func TestSetDefaultsKeepsSetFields(t *testing.T) {
	c := store.Config{PinsTTL: -1, PinsBucket: "p", Replicas: 3, CardsInlineMax: 100}
	c.SetDefaults()
	if c.PinsTTL != -1 {
		t.Fatalf("PinsTTL = %v, want -1 (none) kept", c.PinsTTL)
	}
	if c.PinsBucket != "p" || c.Replicas != 3 || c.CardsInlineMax != 100 {
		t.Fatalf("SetDefaults() = %+v, want set fields kept", c)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*store.Config)
		field string
	}{
		{"replicas-negative", func(c *store.Config) { c.Replicas = -1 }, "Replicas"},
		{"replicas-six", func(c *store.Config) { c.Replicas = 6 }, "Replicas"},
		{"storage", func(c *store.Config) { c.Storage = 7 }, "Storage"},
		{"stream-dot", func(c *store.Config) { c.LifecycleStream = "A2A.TASKS" }, "LifecycleStream"},
		{"stream-reserved", func(c *store.Config) { c.EventsStream = "KV_x" }, "EventsStream"},
		{"stream-duplicate", func(c *store.Config) { c.DLQStream = c.EventsStream }, "DLQStream"},
		{"subjects-no-gt", func(c *store.Config) { c.LifecycleSubjects = "a2a.task" }, "LifecycleSubjects"},
		{"subjects-wildcard", func(c *store.Config) { c.EventsSubjects = "card.*.>" }, "EventsSubjects"},
		{"subjects-space", func(c *store.Config) { c.DLQSubjects = "dead letter.>" }, "DLQSubjects"},
		{"subjects-overlap", func(c *store.Config) { c.DLQSubjects = "card.dlq.>" }, "DLQSubjects"},
		{"subjects-system", func(c *store.Config) { c.DLQSubjects = "$JS.>" }, "DLQSubjects"},
		{"maxage-tiny", func(c *store.Config) { c.LifecycleMaxAge = time.Millisecond }, "LifecycleMaxAge"},
		{"pins-ttl-tiny", func(c *store.Config) { c.PinsTTL = 10 * time.Millisecond }, "PinsTTL"},
		{"cards-ttl-negative", func(c *store.Config) { c.CardsTTL = -1 }, "CardsTTL"},
		{"marker-ttl-tiny", func(c *store.Config) { c.PinsMarkerTTL = time.Millisecond }, "PinsMarkerTTL"},
		{"duplicates-over-maxage", func(c *store.Config) {
			c.EventsMaxAge = time.Minute
			c.EventsDuplicates = 2 * time.Minute
		}, "EventsDuplicates"},
		{"duplicates-tiny", func(c *store.Config) { c.LifecycleDuplicates = time.Millisecond }, "LifecycleDuplicates"},
		{"partitions-negative", func(c *store.Config) { c.Partitions = -1 }, "Partitions"},
		{"partitions-huge", func(c *store.Config) { c.Partitions = topology.MaxPartitions + 1 }, "Partitions"},
		{"consumer-name", func(c *store.Config) { c.ConsumerName = "a.b" }, "ConsumerName"},
		{"ackwait", func(c *store.Config) { c.AckWait = time.Millisecond }, "AckWait"},
		{"maxdeliver", func(c *store.Config) { c.MaxDeliver = -2 }, "MaxDeliver"},
		{"maxackpending", func(c *store.Config) { c.MaxAckPending = -5 }, "MaxAckPending"},
		{"backoff-too-long", func(c *store.Config) {
			c.MaxDeliver = 2
			c.BackOff = []time.Duration{time.Second, 2 * time.Second}
		}, "BackOff"},
		{"backoff-zero-step", func(c *store.Config) { c.BackOff = []time.Duration{0} }, "BackOff"},
		{"bucket-dot", func(c *store.Config) { c.PinsBucket = "carddrift.pins" }, "PinsBucket"},
		{"bucket-duplicate", func(c *store.Config) { c.LeasesBucket = c.PinsBucket }, "LeasesBucket"},
		{"object-bucket", func(c *store.Config) { c.CardsObjectBucket = "large cards" }, "CardsObjectBucket"},
		{"max-value-size", func(c *store.Config) { c.CardsMaxValueSize = 100 }, "CardsMaxValueSize"},
		{"inline-over-max", func(c *store.Config) { c.CardsInlineMax = int(c.CardsMaxValueSize) }, "CardsInlineMax"},
		{"inline-negative", func(c *store.Config) { c.CardsInlineMax = -1 }, "CardsInlineMax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := store.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			var ce *store.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			if ce.Field != tc.field {
				t.Fatalf("Validate() field = %s (%v), want %s", ce.Field, err, tc.field)
			}
		})
	}
}

func TestParseStorage(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    jetstream.StorageType
		wantErr bool
	}{
		{"", jetstream.FileStorage, false},
		{"file", jetstream.FileStorage, false},
		{"Memory", jetstream.MemoryStorage, false},
		{"disk", 0, true},
	} {
		got, err := store.ParseStorage(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Fatalf("ParseStorage(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"100", 100},
		{"100B", 100},
		{"1KiB", 1 << 10},
		{"8GiB", 8 << 30},
		{"8gib", 8 << 30},
		{"8Gi", 8 << 30},
		{"8GB", 8 << 30}, // as nats-server reads max_file_store
		{"8G", 8e9},
		{"1KB", 1 << 10},
		{"2MB", 2 << 20},
		{"64M", 64e6},
		{"1 gib", 1 << 30},
		{"7B", 7},
		{"512MiB", 512 << 20},
		{"1.5GiB", 3 << 29},
		{" 2 MiB ", 2 << 20},
		{".5KiB", 512},
		{"1.0000000000000000000000001KiB", 1 << 10},
		{"0.3333B", 0}, // rounded down to whole bytes
		{"1TiB", 1 << 40},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", 8388607 << 40},
	} {
		got, err := store.ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSizeInvalid(t *testing.T) {
	for _, in := range []string{
		"", " ", "GiB", "-1GiB", "1..2GiB", "1.GiB", ".", "1.2.3B", "8 gigabytes", "8XB", "0x10",
		"9223372036854775808", "8388608TiB", "9223372036854775807.9KiB", "1e9", "+1B",
		"123456789012345678901234567890123B", "1 G iB", "1MiB!", "1PiB", "99999999999999999999",
	} {
		got, err := store.ParseSize(in)
		var se *store.SizeError
		if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalidSize) || se.Input != in {
			t.Errorf("ParseSize(%q) = %d, %v, want a *SizeError for it matching ErrInvalidSize", in, got, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{{0, "0B"}, {100, "100B"}, {1 << 10, "1KiB"}, {1536 << 20, "1536MiB"}, {6 << 30, "6GiB"}, {3 << 40, "3TiB"}} {
		if got := store.FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseSize: ParseSize never panics, rejects with a *SizeError for its
// input only, rejects a blank input, accepts only non-negative sizes, and
// FormatSize of what it accepts reads back the same.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8GiB", "1.5GiB", "512MiB", "100", "8GB", "8G", " 2 MiB ", ".5KiB", "-1", "1e9", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := store.ParseSize(s)
		if err != nil {
			var se *store.SizeError
			if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalidSize) || se.Input != s {
				t.Fatalf("ParseSize(%q) error = %v, want a *SizeError for it", s, err)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			t.Fatalf("ParseSize(%q) = %d, want an error", s, n)
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, want ≥ 0", s, n)
		}
		back, err := store.ParseSize(store.FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, store.FormatSize(n), back, err)
		}
	})
}

func TestLifecycleConsumer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions int
		p          int
		wantName   string
		wantFilter string
	}{
		{"unpartitioned", 0, 0, "carddrift-worker", "a2a.task.>"},
		{"first", 4, 0, "carddrift-worker-p0", "a2a.task.*.*.0"},
		{"last", 4, 3, "carddrift-worker-p3", "a2a.task.*.*.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := store.DefaultConfig()
			c.Partitions = tc.partitions
			cc := c.LifecycleConsumer(tc.p)
			if cc.Durable != tc.wantName || cc.Name != tc.wantName {
				t.Fatalf("LifecycleConsumer(%d).Durable = %q, want %q", tc.p, cc.Durable, tc.wantName)
			}
			if cc.FilterSubject != tc.wantFilter {
				t.Fatalf("LifecycleConsumer(%d).FilterSubject = %q, want %q", tc.p, cc.FilterSubject, tc.wantFilter)
			}
			if cc.AckPolicy != jetstream.AckExplicitPolicy {
				t.Fatalf("LifecycleConsumer(%d).AckPolicy = %v, want explicit", tc.p, cc.AckPolicy)
			}
			if cc.AckWait != 30*time.Second || cc.MaxDeliver != -1 || cc.MaxAckPending != 1000 {
				t.Fatalf("LifecycleConsumer(%d) = AckWait %v MaxDeliver %d MaxAckPending %d, want 30s -1 1000",
					tc.p, cc.AckWait, cc.MaxDeliver, cc.MaxAckPending)
			}
		})
	}
	t.Run("out-of-range-panics", func(t *testing.T) {
		c := store.DefaultConfig()
		c.Partitions = 2
		defer func() {
			if recover() == nil {
				t.Fatalf("LifecycleConsumer(2) of 2 partitions did not panic")
			}
		}()
		c.LifecycleConsumer(2)
	})
	t.Run("placed", func(t *testing.T) {
		c := store.DefaultConfig()
		c.Replicas = 3
		c.Storage = jetstream.MemoryStorage
		if cc := c.LifecycleConsumer(0); cc.Replicas != 3 || !cc.MemoryStorage {
			t.Fatalf("LifecycleConsumer(0) = replicas %d memory %v, want the Config's 3, memory", cc.Replicas, cc.MemoryStorage)
		}
	})
	t.Run("all", func(t *testing.T) {
		c := store.DefaultConfig()
		c.Partitions = 3
		if got := len(c.LifecycleConsumers()); got != 3 {
			t.Fatalf("len(LifecycleConsumers()) = %d, want 3", got)
		}
	})
}

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
