package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// snapshot is everything Provision manages, as the server reports it.
type snapshot struct {
	streams map[string]*jetstream.StreamInfo
}

func takeSnapshot(t *testing.T, js jetstream.JetStream) snapshot {
	t.Helper()
	s := snapshot{streams: map[string]*jetstream.StreamInfo{}}
	l := js.ListStreams(t.Context())
	for info := range l.Info() {
		s.streams[info.Config.Name] = info
	}
	if err := l.Err(); err != nil {
		t.Fatalf("ListStreams() error = %v", err)
	}
	return s
}

// mustProvision provisions cfg on js, which must succeed.
func mustProvision(t *testing.T, js jetstream.JetStream, cfg store.Config) {
	t.Helper()
	if err := store.Provision(t.Context(), js, cfg); err != nil {
		t.Fatalf("Provision() error = %v", err)
	}
}

func TestProvisionIdempotent(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.DefaultConfig()
		mustProvision(t, js, cfg)
		first := takeSnapshot(t, js)
		wantStreams := []string{
			"A2A_TASKS", "CARD_EVENTS", "CARDDRIFT_DLQ",
			"KV_carddrift-pins", "KV_carddrift-cards", "KV_carddrift-leases", "OBJ_carddrift-cards-large",
		}
		if got := len(first.streams); got != len(wantStreams) {
			t.Fatalf("streams after Provision = %d, want %d", got, len(wantStreams))
		}
		for _, name := range wantStreams {
			if first.streams[name] == nil {
				t.Fatalf("stream %s missing after Provision", name)
			}
		}
		for range 2 {
			if err := store.Provision(t.Context(), js, cfg); err != nil {
				t.Fatalf("Provision() again error = %v", err)
			}
		}
		second := takeSnapshot(t, js)
		for name, a := range first.streams {
			b := second.streams[name]
			if !reflect.DeepEqual(a.Config, b.Config) {
				t.Fatalf("stream %s config changed by a second Provision:\n%+v\nto\n%+v", name, a.Config, b.Config)
			}
			if !a.Created.Equal(b.Created) {
				t.Fatalf("stream %s created = %v, want %v (not recreated)", name, b.Created, a.Created)
			}
		}

		// A changed knob is applied in place.
		cfg.EventsMaxAge = 48 * time.Hour
		if err := store.Provision(t.Context(), js, cfg); err != nil {
			t.Fatalf("Provision(changed) error = %v", err)
		}
		third := takeSnapshot(t, js)
		if got := third.streams["CARD_EVENTS"].Config.MaxAge; got != 48*time.Hour {
			t.Fatalf("CARD_EVENTS MaxAge after update = %v, want 48h", got)
		}
	})
}

func TestProvisionedSettings(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.Config{Storage: jetstream.MemoryStorage, PinsTTL: time.Hour, CardsMaxValueSize: 64 << 10}
		mustProvision(t, js, cfg)
		s := takeSnapshot(t, js)
		for name, info := range s.streams {
			if info.Config.Storage != jetstream.MemoryStorage {
				t.Fatalf("stream %s storage = %v, want memory", name, info.Config.Storage)
			}
		}
		for _, tc := range []struct {
			what      string
			got, want any
		}{
			{"A2A_TASKS subjects", s.streams["A2A_TASKS"].Config.Subjects, []string{"a2a.task.>"}},
			{"A2A_TASKS max age", s.streams["A2A_TASKS"].Config.MaxAge, 7 * 24 * time.Hour},
			{"CARD_EVENTS duplicates", s.streams["CARD_EVENTS"].Config.Duplicates, 2 * time.Minute},
			{"CARDDRIFT_DLQ subjects", s.streams["CARDDRIFT_DLQ"].Config.Subjects, []string{"carddrift.dlq.>"}},
			{"pins TTL", s.streams["KV_carddrift-pins"].Config.MaxAge, time.Hour},
			{"pins markers", s.streams["KV_carddrift-pins"].Config.SubjectDeleteMarkerTTL, 15 * time.Minute},
			{"cards max value", s.streams["KV_carddrift-cards"].Config.MaxMsgSize, int32(64 << 10)},
			{"cards TTL", s.streams["KV_carddrift-cards"].Config.MaxAge, time.Duration(0)},
			{"leases TTL", s.streams["KV_carddrift-leases"].Config.MaxAge, 24 * time.Hour},
		} {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
			}
		}
	})
}

func TestProvisionInvalidConfig(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		err := store.Provision(t.Context(), js, store.Config{PinsBucket: "no.dots"})
		var ce *store.ConfigError
		if !errors.As(err, &ce) || ce.Field != "PinsBucket" {
			t.Fatalf("Provision(bad bucket) error = %v, want *ConfigError for PinsBucket", err)
		}
		if _, err := store.Bind[testRecord](t.Context(), js, store.Config{}); !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Fatalf("Bind() before Provision error = %v, want %v", err, jetstream.ErrBucketNotFound)
		}
	})
}

// TestPartitionTransform checks the server's semantics of the stream's
// subject transform: a2a.task.<kind>.<taskId> is stored as
// a2a.task.<kind>.<taskId>.<p> with p = PartitionOf(taskId), every kind of
// one task lands in the same partition, and each partition's consumer sees
// exactly its tasks.
func TestPartitionTransform(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.DefaultConfig()
		cfg.Partitions = 4
		mustProvision(t, js, cfg)
		tasks := []string{"dGFzay0x", "dGFzay0y", "dGFzay0z", "YS5i", "w6k", "t-5", "t-6", "t-7", "t-8", "t-9"}
		kinds := []string{"submitted", "request", "status"}
		want := map[int]map[string]bool{} // partition → stored subjects
		for _, task := range tasks {
			p := cfg.PartitionOf(task)
			for _, kind := range kinds {
				if _, err := js.Publish(t.Context(), "a2a.task."+kind+"."+task, []byte(`{}`)); err != nil {
					t.Fatalf("Publish(%s, %s) error = %v", kind, task, err)
				}
				if want[p] == nil {
					want[p] = map[string]bool{}
				}
				want[p]["a2a.task."+kind+"."+task+"."+strconv.Itoa(p)] = true
			}
		}
		if len(want) < 2 {
			t.Fatalf("tasks fell in %d partitions, want the test to span several", len(want))
		}
		for p := range cfg.Partitions {
			cons, err := js.CreateOrUpdateConsumer(t.Context(), cfg.LifecycleStream, cfg.LifecycleConsumer(p))
			if err != nil {
				t.Fatalf("CreateOrUpdateConsumer(p%d) error = %v", p, err)
			}
			got := map[string]bool{}
			if n := len(want[p]); n > 0 {
				batch, err := cons.Fetch(n, jetstream.FetchMaxWait(2*time.Second))
				if err != nil {
					t.Fatalf("Fetch(p%d) error = %v", p, err)
				}
				for m := range batch.Messages() {
					got[m.Subject()] = true
					if err := m.Ack(); err != nil {
						t.Fatalf("Ack() error = %v", err)
					}
				}
			}
			if !reflect.DeepEqual(got, nonNil(want[p])) {
				t.Fatalf("partition %d subjects = %v, want %v", p, got, want[p])
			}
			info, err := cons.Info(t.Context())
			if err != nil {
				t.Fatalf("consumer Info(p%d) error = %v", p, err)
			}
			if info.NumPending != 0 {
				t.Fatalf("partition %d pending after fetch = %d, want 0", p, info.NumPending)
			}
		}
		// With partitions the stream takes only <prefix>.<kind>.<taskId>.
		_, err := js.Publish(t.Context(), "a2a.task.malformed", []byte(`{}`))
		if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("Publish(3 tokens) error = %v, want no responders", err)
		}
	})
}

func nonNil(m map[string]bool) map[string]bool {
	if m == nil {
		return map[string]bool{}
	}
	return m
}

func TestEventsDedup(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		if err := store.Provision(t.Context(), js, store.Config{}); err != nil {
			t.Fatalf("Provision() error = %v", err)
		}
		for i, wantDup := range []bool{false, true} {
			ack, err := js.Publish(t.Context(), "card.drift.agent.task", []byte(`{}`), jetstream.WithMsgID("drift-1"))
			if err != nil {
				t.Fatalf("Publish #%d error = %v", i+1, err)
			}
			if ack.Duplicate != wantDup {
				t.Fatalf("Publish #%d Duplicate = %v, want %v", i+1, ack.Duplicate, wantDup)
			}
		}
	})
}

func TestOpenLargeCardsUseObjectStore(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.Config{CardsInlineMax: 256}
		st, err := store.Open[testRecord](t.Context(), js, cfg)
		if err != nil {
			t.Fatalf("Open() error = %v", err)
		}
		small, large := testBody("small", 200), testBody("large", 300<<10)
		ds, dl := testDigest("small"), testDigest("large")
		for d, raw := range map[string][]byte{ds: small, dl: large} {
			if err := st.Cards.Put(t.Context(), d, raw); err != nil {
				t.Fatalf("Put(%d bytes) error = %v", len(raw), err)
			}
		}
		kv, err := js.KeyValue(t.Context(), store.DefaultCardsBucket)
		if err != nil {
			t.Fatalf("KeyValue() error = %v", err)
		}
		obj, err := js.ObjectStore(t.Context(), store.DefaultCardsObjectBucket)
		if err != nil {
			t.Fatalf("ObjectStore() error = %v", err)
		}
		e, err := kv.Get(t.Context(), strings.TrimPrefix(ds, "sha256:"))
		if err != nil {
			t.Fatalf("kv.Get(small) error = %v", err)
		}
		if !bytes.Equal(e.Value(), small) {
			t.Fatalf("small card KV value = %.40q, want the body itself", e.Value())
		}
		e, err = kv.Get(t.Context(), strings.TrimPrefix(dl, "sha256:"))
		if err != nil {
			t.Fatalf("kv.Get(large) error = %v", err)
		}
		if len(e.Value()) > 200 {
			t.Fatalf("large card KV value = %d bytes, want a small marker", len(e.Value()))
		}
		info, err := obj.GetInfo(t.Context(), strings.TrimPrefix(dl, "sha256:"))
		if err != nil {
			t.Fatalf("obj.GetInfo(large) error = %v", err)
		}
		if info.Size != uint64(len(large)) {
			t.Fatalf("object size = %d, want %d", info.Size, len(large))
		}
		got, err := st.Cards.Get(t.Context(), dl)
		if err != nil || !bytes.Equal(got, large) {
			t.Fatalf("Get(large) = %d bytes, %v; want %d bytes, nil", len(got), err, len(large))
		}
		// A lost object is ErrNotFound, not a silent empty card.
		if err := obj.Delete(t.Context(), strings.TrimPrefix(dl, "sha256:")); err != nil {
			t.Fatalf("obj.Delete() error = %v", err)
		}
		if _, err := st.Cards.Get(t.Context(), dl); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(large, object lost) error = %v, want %v", err, store.ErrNotFound)
		}
	})
}

// A pin expires by the bucket's TTL, and its id can be created again.
func TestPinsTTLExpiry(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.Config{PinsTTL: time.Second, PinsMarkerTTL: time.Second}
		st, err := store.Open[testRecord](t.Context(), js, cfg)
		if err != nil {
			t.Fatalf("Open() error = %v", err)
		}
		if _, err := st.Pins.Create(t.Context(), testPin("short-lived", 1)); err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, _, err := st.Pins.Get(t.Context(), "short-lived")
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("Get() after TTL error = %v, want %v", err, store.ErrNotFound)
			}
		}
		if _, err := st.Pins.Create(t.Context(), testPin("short-lived", 2)); err != nil {
			t.Fatalf("Create() after expiry error = %v", err)
		}
	})
}

// TestProvisionRestartUpdatesNothing: Provision again with the same Config
// (every restart of serve) sends no stream update: each would be a meta
// proposal and an advisory in a cluster. The one update made afterwards,
// with a changed knob, is the first advisory to arrive.
func TestProvisionRestartUpdatesNothing(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		for _, partitions := range []int{0, 4} {
			cfg := store.DefaultConfig()
			cfg.Partitions = partitions
			mustProvision(t, js, cfg)
			updates := make(chan string, 64)
			sub, err := js.Conn().Subscribe("$JS.EVENT.ADVISORY.STREAM.UPDATED.>", func(m *nats.Msg) { updates <- m.Subject })
			if err != nil {
				t.Fatalf("Subscribe() error = %v", err)
			}
			if err := js.Conn().Flush(); err != nil {
				t.Fatalf("Flush() error = %v", err)
			}
			// The first Provision's own updates may still be advised: the
			// server sends advisories in order, so once a sentinel stream's
			// update is advised they all were.
			sentinel := jetstream.StreamConfig{Name: fmt.Sprintf("SENTINEL_%d", partitions), Subjects: []string{fmt.Sprintf("sentinel.%d", partitions)}}
			if _, err := js.CreateStream(t.Context(), sentinel); err != nil {
				t.Fatalf("CreateStream(sentinel) error = %v", err)
			}
			sentinel.Description = "updated"
			if _, err := js.UpdateStream(t.Context(), sentinel); err != nil {
				t.Fatalf("UpdateStream(sentinel) error = %v", err)
			}
			for got := ""; got != "$JS.EVENT.ADVISORY.STREAM.UPDATED."+sentinel.Name; {
				select {
				case got = <-updates:
				case <-time.After(30 * time.Second):
					t.Fatalf("partitions %d: no update advisory for the sentinel stream", partitions)
				}
			}
			if err := store.Provision(t.Context(), js, cfg); err != nil {
				t.Fatalf("Provision() again error = %v", err)
			}
			cfg.DLQMaxAge = 40 * 24 * time.Hour
			if err := store.Provision(t.Context(), js, cfg); err != nil {
				t.Fatalf("Provision(changed) error = %v", err)
			}
			select {
			case got := <-updates:
				if want := "$JS.EVENT.ADVISORY.STREAM.UPDATED." + cfg.DLQStream; got != want {
					t.Errorf("partitions %d: first update advisory %s, want %s (a Provision with the same Config updated a stream)", partitions, got, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("partitions %d: no update advisory for the changed DLQ max age", partitions)
			}
			_ = sub.Unsubscribe()
			for _, s := range []string{cfg.LifecycleStream, cfg.EventsStream, cfg.DLQStream} {
				if err := js.DeleteStream(t.Context(), s); err != nil {
					t.Fatalf("DeleteStream(%s) error = %v", s, err)
				}
			}
		}
	})
}

// TestProvisionUpgradesStreams: streams as e91b0a3 made them (no byte
// limit, no message size limit, 8 partitions) are brought to their limits
// in place, keeping their messages.
func TestProvisionUpgradesStreams(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		ctx := t.Context()
		cfg := store.DefaultConfig()
		cfg.Partitions = 8
		old := []jetstream.StreamConfig{{
			Name: cfg.LifecycleStream, Description: "carddrift: A2A task lifecycle CloudEvents from clients",
			Subjects: []string{"a2a.task.*.*"}, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
			MaxAge: cfg.LifecycleMaxAge, Duplicates: cfg.LifecycleDuplicates,
			SubjectTransform: &jetstream.SubjectTransformConfig{Source: "a2a.task.*.*", Destination: "a2a.task.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(8,2)}}"},
		}, {
			Name: cfg.EventsStream, Description: "carddrift: card.drift, card.pinned, card.observed, card.unreachable",
			Subjects: []string{cfg.EventsSubjects}, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
			MaxAge: cfg.EventsMaxAge, Duplicates: cfg.EventsDuplicates,
		}, {
			Name: cfg.DLQStream, Description: "carddrift: lifecycle events workers gave up on",
			Subjects: []string{cfg.DLQSubjects}, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
			MaxAge: cfg.DLQMaxAge,
		}}
		for _, sc := range old {
			if _, err := js.CreateStream(ctx, sc); err != nil {
				t.Fatalf("CreateStream(%s) error = %v", sc.Name, err)
			}
		}
		if _, err := js.Publish(ctx, "a2a.task.status.t1", []byte(`{}`)); err != nil {
			t.Fatalf("Publish() error = %v", err)
		}
		if err := store.Provision(ctx, js, cfg); err != nil {
			t.Fatalf("Provision() over e91b0a3's streams error = %v", err)
		}
		limits := cfg.Limits()
		for _, sc := range old {
			s, err := js.Stream(ctx, sc.Name)
			if err != nil {
				t.Fatalf("Stream(%s) error = %v", sc.Name, err)
			}
			info := s.CachedInfo()
			if info.Config.MaxBytes != limits[sc.Name] {
				t.Errorf("%s MaxBytes = %d, want %d", sc.Name, info.Config.MaxBytes, limits[sc.Name])
			}
			if sc.Name == cfg.LifecycleStream && (info.State.Msgs != 1 || info.Config.MaxMsgSize != cfg.LifecycleMaxMsgSize) {
				t.Errorf("%s after the upgrade: %d messages, MaxMsgSize %d; want 1, %d", sc.Name, info.State.Msgs, info.Config.MaxMsgSize, cfg.LifecycleMaxMsgSize)
			}
		}
	})
}
