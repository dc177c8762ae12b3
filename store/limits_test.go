package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// padded is a pin of taskID with pad in it, to fill buckets.
func padded(taskID, pad string) testRecord {
	r := testPin(taskID, 0)
	r.Reported = []string{pad}
	return r
}

func TestStorageSharesSplitTheLimit(t *testing.T) {
	var sum int64
	for _, sh := range store.StorageShares {
		sum += sh.Of24
	}
	if sum != 24 {
		t.Fatalf("StorageShares add up to %d/24, want 24/24", sum)
	}
	for _, tc := range []struct {
		name string
		cfg  store.Config
		want int64
	}{
		{"file", store.Config{}, store.DefaultStorageLimit},
		{"memory", store.Config{Storage: jetstream.MemoryStorage}, store.DefaultMemoryStorageLimit},
		{"set", store.Config{StorageLimit: 48 << 20}, 48 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SetDefaults()
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			var total int64
			for name, v := range cfg.Limits() {
				if v < store.MinMaxBytes {
					t.Errorf("limit of %s = %d, want ≥ %d", name, v, store.MinMaxBytes)
				}
				total += v
			}
			if total != tc.want || cfg.StorageLimitOf() != tc.want {
				t.Fatalf("limits add up to %d (StorageLimitOf %d), want %d", total, cfg.StorageLimitOf(), tc.want)
			}
		})
	}
	// An explicit limit is kept; the others keep their shares.
	cfg := store.Config{Topology: topology.Topology{LifecycleMaxBytes: 3 << 30}}
	cfg.SetDefaults()
	if l := cfg.Limits(); l["A2A_TASKS"] != 3<<30 || l["CARD_EVENTS"] != store.DefaultStorageLimit/6 {
		t.Fatalf("limits of A2A_TASKS, CARD_EVENTS = %d, %d, want %d, %d", l["A2A_TASKS"], l["CARD_EVENTS"], int64(3<<30), int64(store.DefaultStorageLimit/6))
	}
	// Storage changed after the defaults: the memory default applies.
	cfg = store.DefaultConfig()
	cfg.Storage = jetstream.MemoryStorage
	if got := cfg.StorageLimitOf(); got != store.DefaultMemoryStorageLimit {
		t.Fatalf("StorageLimitOf() of DefaultConfig with memory storage = %d, want %d", got, store.DefaultMemoryStorageLimit)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   store.Config
	}{
		{"StorageLimit", store.Config{StorageLimit: 1 << 20}},
		{"StorageLimit", store.Config{StorageLimit: -1}},
		{"LifecycleMaxBytes", store.Config{Topology: topology.Topology{LifecycleMaxBytes: 1000}}},
		{"DLQMaxBytes", store.Config{Topology: topology.Topology{DLQMaxBytes: -5}}},
		{"PinsMaxBytes", store.Config{PinsMaxBytes: 1}},
		{"CardsMaxBytes", store.Config{CardsMaxBytes: 1 << 20, CardsMaxValueSize: 2 << 20}},
		{"LifecycleMaxMsgSize", store.Config{Topology: topology.Topology{LifecycleMaxBytes: 1 << 20, LifecycleMaxMsgSize: 2 << 20}}},
		{"LifecycleMaxMsgSize", store.Config{Topology: topology.Topology{LifecycleMaxMsgSize: 10}}},
	} {
		cfg := tc.cfg
		cfg.SetDefaults()
		err := cfg.Validate()
		var ce *store.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Validate(%+v) = %v, want a *ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
}

// TestProvisionByteLimits: every stream and bucket has its byte limit and
// discards its oldest messages; the lifecycle stream bounds its messages
// so that their dead letters fit.
func TestProvisionByteLimits(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.DefaultConfig()
		if err := store.Provision(t.Context(), js, cfg); err != nil {
			t.Fatalf("Provision() error = %v", err)
		}
		s := takeSnapshot(t, js)
		for name, want := range cfg.Limits() {
			info := s.streams[name]
			if info == nil {
				t.Fatalf("stream %s missing", name)
			}
			if info.Config.MaxBytes != want || info.Config.Discard != jetstream.DiscardOld {
				t.Errorf("stream %s MaxBytes, Discard = %d, %v, want %d, DiscardOld", name, info.Config.MaxBytes, info.Config.Discard, want)
			}
		}
		if got := s.streams["A2A_TASKS"].Config.MaxMsgSize; got != topology.DefaultLifecycleMaxMsgSize {
			t.Errorf("A2A_TASKS MaxMsgSize = %d, want %d", got, topology.DefaultLifecycleMaxMsgSize)
		}
		if !s.streams["KV_carddrift-cards"].Config.AllowMsgTTL {
			t.Errorf("KV_carddrift-cards AllowMsgTTL = false, want true (the GC's purge markers expire)")
		}
	})
}

// TestProvisionUpdatesBuckets: buckets made before byte limits (as
// nats.go makes them: DiscardNew, no MaxBytes) get their limits and
// DiscardOld in place, their keys kept; a second Provision with lower
// limits lowers them, and the streams hold no more than the new limit.
func TestProvisionUpdatesBuckets(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		ctx := t.Context()
		old, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: store.DefaultPinsBucket, History: 1, TTL: 24 * time.Hour})
		if err != nil {
			t.Fatalf("CreateOrUpdateKeyValue() error = %v", err)
		}
		if _, err := old.Put(ctx, "kept", []byte("{}")); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
		if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: store.DefaultCardsObjectBucket}); err != nil {
			t.Fatalf("CreateOrUpdateObjectStore() error = %v", err)
		}
		cfg := store.Config{StorageLimit: 240 << 20}
		if err := store.Provision(ctx, js, cfg); err != nil {
			t.Fatalf("Provision() error = %v", err)
		}
		for name, want := range map[string]int64{"KV_carddrift-pins": 40 << 20, "OBJ_carddrift-cards-large": 20 << 20} {
			info := streamInfo(t, js, name)
			if info.Config.MaxBytes != want || info.Config.Discard != jetstream.DiscardOld {
				t.Fatalf("%s MaxBytes, Discard = %d, %v, want %d, DiscardOld", name, info.Config.MaxBytes, info.Config.Discard, want)
			}
		}
		if _, err := old.Get(ctx, "kept"); err != nil {
			t.Fatalf("Get(kept) after Provision error = %v", err)
		}

		// Fill the lifecycle stream past what the lower limit will allow.
		payload := []byte(strings.Repeat("x", 64<<10))
		for i := range 400 { // 25 MiB
			if _, err := js.Publish(ctx, fmt.Sprintf("a2a.task.status.t%d", i), payload); err != nil {
				t.Fatalf("Publish(%d) error = %v", i, err)
			}
		}
		lower := store.Config{StorageLimit: 24 << 20} // A2A_TASKS: 8 MiB
		if err := store.Provision(ctx, js, lower); err != nil {
			t.Fatalf("Provision(lower) error = %v", err)
		}
		info := streamInfo(t, js, "A2A_TASKS")
		if info.Config.MaxBytes != 8<<20 || info.State.Bytes > 8<<20 || info.State.FirstSeq == 1 {
			t.Fatalf("A2A_TASKS after lowering: MaxBytes %d, Bytes %d, FirstSeq %d; want 8 MiB, ≤ 8 MiB, > 1",
				info.Config.MaxBytes, info.State.Bytes, info.State.FirstSeq)
		}
		if info.State.LastSeq != 400 {
			t.Fatalf("A2A_TASKS LastSeq = %d, want 400 (the newest kept)", info.State.LastSeq)
		}
	})
}

func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(t.Context(), name)
	if err != nil {
		t.Fatalf("Stream(%s) error = %v", name, err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("Info(%s) error = %v", name, err)
	}
	return info
}

// TestFullStoresNeverRefuse: a pins bucket and a dead-letter stream at
// their limits keep taking writes; the oldest go first.
func TestFullStoresNeverRefuse(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		ctx := t.Context()
		cfg := store.Config{StorageLimit: 24 << 20} // pins 4 MiB, DLQ 2 MiB
		st, err := store.Open[testRecord](ctx, js, cfg)
		if err != nil {
			t.Fatalf("Open() error = %v", err)
		}
		pad := strings.Repeat("p", 8<<10)
		const n = 1200 // ~10 MiB of pins
		for i := range n {
			if _, err := st.Pins.Create(ctx, padded(fmt.Sprintf("task-%d", i), pad)); err != nil {
				t.Fatalf("Create(task-%d) into a full bucket error = %v", i, err)
			}
		}
		if _, _, err := st.Pins.Get(ctx, "task-0"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(task-0) error = %v, want ErrNotFound (the oldest pin dropped)", err)
		}
		if _, _, err := st.Pins.Get(ctx, fmt.Sprintf("task-%d", n-1)); err != nil {
			t.Fatalf("Get(newest) error = %v", err)
		}
		if info := streamInfo(t, js, "KV_carddrift-pins"); info.State.Bytes > 4<<20 {
			t.Fatalf("pins bucket holds %d bytes, limit %d", info.State.Bytes, 4<<20)
		}
		for i := range 300 { // ~19 MiB of dead letters into 2 MiB
			m := nats.NewMsg(fmt.Sprintf("carddrift.dlq.x.%d", i))
			m.Data = []byte(strings.Repeat("d", 64<<10))
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatalf("dead letter %d into a full stream error = %v", i, err)
			}
		}
		if info := streamInfo(t, js, "CARDDRIFT_DLQ"); info.State.Bytes > 2<<20 || info.State.LastSeq != 300 {
			t.Fatalf("CARDDRIFT_DLQ holds %d bytes up to seq %d, want ≤ %d up to 300", info.State.Bytes, info.State.LastSeq, 2<<20)
		}
	})
}

// TestProvisionStorageExceeded: limits the server cannot reserve are
// ErrStorageExceeded, not a bare server error.
func TestProvisionStorageExceeded(t *testing.T) {
	_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 64 << 20 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := store.Provision(ctx, js, store.DefaultConfig()); !errors.Is(err, store.ErrStorageExceeded) {
		t.Fatalf("Provision(6 GiB on a 64 MiB server) error = %v, want ErrStorageExceeded", err)
	}
	if err := store.Provision(ctx, js, store.Config{StorageLimit: 48 << 20}); err != nil {
		t.Fatalf("Provision(48 MiB on a 64 MiB server) error = %v", err)
	}
}
