package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/topology"
	"github.com/nats-io/nats.go/jetstream"
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
