package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
	"github.com/nats-io/nats.go/jetstream"
)

// newKV makes a fresh KV bucket on js for one subtest.
func newKV(t *testing.T, js jetstream.JetStream, prefix string, cfg jetstream.KeyValueConfig) jetstream.KeyValue {
	t.Helper()
	cfg.Bucket = freshName(prefix)
	kv, err := js.CreateKeyValue(t.Context(), cfg)
	if err != nil {
		t.Fatalf("CreateKeyValue(%s) error = %v", cfg.Bucket, err)
	}
	return kv
}

func TestKVPinsConformance(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		pinsSuite(t, func(t *testing.T) store.Pins[testRecord] {
			return store.NewKVPins[testRecord](newKV(t, js, "pins", jetstream.KeyValueConfig{}))
		})
	})
}

func TestKVLeasesConformance(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		leasesSuite(t, func(t *testing.T) store.Leases {
			return store.NewKVLeases(newKV(t, js, "leases", jetstream.KeyValueConfig{}))
		})
	})
}

func TestKVCardsConformance(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inlineMax int
	}{
		{"default-threshold", store.DefaultConfig().CardsInlineMax},
		{"small-threshold", 512}, // nearly every body goes through the object store
	} {
		t.Run(tc.name, func(t *testing.T) {
			withJS(t, func(js jetstream.JetStream) {
				cardsSuite(t, func(t *testing.T) store.Cards {
					kv := newKV(t, js, "cards", jetstream.KeyValueConfig{MaxValueSize: 1 << 20})
					obj, err := js.CreateObjectStore(t.Context(), jetstream.ObjectStoreConfig{Bucket: freshName("cards-large")})
					if err != nil {
						t.Fatalf("CreateObjectStore() error = %v", err)
					}
					return store.NewKVCards(kv, obj, tc.inlineMax)
				})
			})
		})
	}
}

func TestKVPinsPurgedIsNotFound(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		kv := newKV(t, js, "pins", jetstream.KeyValueConfig{History: 5})
		ps := store.NewKVPins[testRecord](kv)
		rev, err := ps.Create(t.Context(), testPin("t1", 1))
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		if err := kv.Purge(t.Context(), store.EncodeKey("t1")); err != nil {
			t.Fatalf("kv.Purge() error = %v", err)
		}
		if _, _, err := ps.Get(t.Context(), "t1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get() after purge error = %v, want %v", err, store.ErrNotFound)
		}
		if _, err := ps.Update(t.Context(), testPin("t1", 2), rev); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Update() after purge error = %v, want %v", err, store.ErrNotFound)
		}
	})
}

func TestKVPinsCorruptValue(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		kv := newKV(t, js, "pins", jetstream.KeyValueConfig{})
		ps := store.NewKVPins[testRecord](kv)
		for _, tc := range []struct {
			name, id string
			value    []byte
		}{
			{"not-json", "t1", []byte("{")},
			{"other-task", "t2", []byte(`{"taskId":"someone-else"}`)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := kv.Put(t.Context(), store.EncodeKey(tc.id), tc.value); err != nil {
					t.Fatalf("kv.Put() error = %v", err)
				}
				if _, _, err := ps.Get(t.Context(), tc.id); !errors.Is(err, store.ErrCorrupt) {
					t.Fatalf("Get() error = %v, want %v", err, store.ErrCorrupt)
				}
			})
		}
	})
}

func TestKVWatch(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		kv := newKV(t, js, "leases", jetstream.KeyValueConfig{})
		ls := store.NewKVLeases(kv)
		w, err := ls.Watch(t.Context())
		if err != nil {
			t.Fatalf("Watch() error = %v", err)
		}
		url := "https://a.example/.well-known/agent-card.json"
		long := "https://a.example/" + strings.Repeat("x", store.MaxReversibleID)
		r1, _ := ls.Create(t.Context(), testLease(url, 1))
		r2, _ := ls.Update(t.Context(), testLease(url, 2), r1)
		r3, _ := ls.Create(t.Context(), testLease(long, 1))
		if err := kv.Delete(t.Context(), store.EncodeKey(url)); err != nil {
			t.Fatalf("kv.Delete() error = %v", err)
		}
		want := []store.Change{
			{Key: store.EncodeKey(url), ID: url, Rev: r1, Op: store.OpPut},
			{Key: store.EncodeKey(url), ID: url, Rev: r2, Op: store.OpPut},
			{Key: store.EncodeKey(long), ID: "", Rev: r3, Op: store.OpPut},
			{Key: store.EncodeKey(url), ID: url, Rev: r3 + 1, Op: store.OpDelete},
		}
		// The watch reports changes in revision order and always the latest
		// of each key; under load the ordered consumer behind it can skip a
		// revision that a later one of the same key supersedes (seen under
		// -race), which is all a cache needs to know.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		last := want[len(want)-1]
		var prev uint64
		seenLong := false
		for {
			got, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("Next() error = %v before the final delete", err)
			}
			if !slices.Contains(want, got) {
				t.Fatalf("Next() = %+v, not one of the changes made: %+v", got, want)
			}
			if got.Rev <= prev {
				t.Fatalf("Next() = %+v after revision %d: out of order", got, prev)
			}
			prev = got.Rev
			seenLong = seenLong || got == want[2]
			if got == last {
				break
			}
		}
		if !seenLong {
			t.Fatalf("the long key's put %+v (not superseded) was not reported", want[2])
		}
		if err := w.Stop(); err != nil {
			t.Fatalf("Stop() error = %v", err)
		}
		if err := w.Stop(); err != nil {
			t.Fatalf("Stop() twice error = %v", err)
		}
		if _, err := w.Next(ctx); !errors.Is(err, store.ErrWatchClosed) {
			t.Fatalf("Next() after Stop error = %v, want %v", err, store.ErrWatchClosed)
		}
	})
}
