package store_test

import (
	"testing"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/storetest"
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
		storetest.Pins(t, func(t *testing.T) store.Pins {
			return store.NewKVPins(newKV(t, js, "pins", jetstream.KeyValueConfig{}))
		})
	})
}

func TestKVLeasesConformance(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		storetest.Leases(t, func(t *testing.T) store.Leases {
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
				storetest.Cards(t, func(t *testing.T) store.Cards {
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
