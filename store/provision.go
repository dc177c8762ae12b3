package store

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Stores are the JetStream-backed stores of one Config, bound by Open or
// Bind. They share the caller's connection; closing it is the caller's job.
type Stores[T Record[T]] struct {
	Pins   *KVPins[T]
	Cards  *KVCards
	Leases *KVLeases
}

// Open provisions everything cfg names (Provision) and binds the stores
// (Bind). Zero fields of cfg take their defaults.
func Open[T Record[T]](ctx context.Context, js jetstream.JetStream, cfg Config) (*Stores[T], error) {
	if err := Provision(ctx, js, cfg); err != nil {
		return nil, err
	}
	return Bind[T](ctx, js, cfg)
}

// Bind binds the stores to buckets that already exist, for processes
// allowed to read and write but not to manage streams. Zero fields of cfg
// take their defaults. A missing bucket is jetstream.ErrBucketNotFound or
// jetstream.ErrStreamNotFound.
func Bind[T Record[T]](ctx context.Context, js jetstream.JetStream, cfg Config) (*Stores[T], error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var pins, cards, leases jetstream.KeyValue
	for _, b := range []struct {
		kv           *jetstream.KeyValue
		what, bucket string
	}{
		{&pins, "pins", cfg.PinsBucket},
		{&cards, "cards", cfg.CardsBucket},
		{&leases, "leases", cfg.LeasesBucket},
	} {
		kv, err := js.KeyValue(ctx, b.bucket)
		if err != nil {
			return nil, fmt.Errorf("store: bind %s bucket %s: %w", b.what, b.bucket, err)
		}
		*b.kv = kv
	}
	obj, err := js.ObjectStore(ctx, cfg.CardsObjectBucket)
	if err != nil {
		return nil, fmt.Errorf("store: bind object store %s: %w", cfg.CardsObjectBucket, err)
	}
	inline := cfg.CardsInlineMax
	if mp := int(js.Conn().MaxPayload()) - InlineHeadroom; mp > 0 && mp < inline {
		inline = mp
	}
	return &Stores[T]{
		Pins:   NewKVPins[T](pins),
		Cards:  NewKVCards(cards, obj, inline),
		Leases: NewKVLeases(leases),
	}, nil
}

// Provision creates or updates every stream and bucket of cfg (zero fields
// take their defaults): the lifecycle, outbound-events and dead-letter
// streams, the pins, cards and leases KV buckets and the large-cards Object
// Store. It is idempotent: running it again with the same cfg changes
// nothing. Consumers are the worker's (see Config.LifecycleConsumer).
// A change the server cannot apply in place (say, Storage) fails with the
// server's error.
func Provision(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, sc := range cfg.streamConfigs() {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("store: provision stream %s: %w", sc.Name, err)
		}
	}
	for _, kc := range cfg.bucketConfigs() {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("store: provision bucket %s: %w", kc.Bucket, err)
		}
	}
	oc := cfg.objectStoreConfig()
	if _, err := js.CreateOrUpdateObjectStore(ctx, oc); err != nil {
		return fmt.Errorf("store: provision object store %s: %w", oc.Bucket, err)
	}
	return nil
}

// bucketConfigs returns the KV buckets' configs of a defaulted cfg.
func (c *Config) bucketConfigs() []jetstream.KeyValueConfig {
	pins := jetstream.KeyValueConfig{
		Bucket:      c.PinsBucket,
		Description: "carddrift: pin per task",
		History:     1,
		TTL:         none(c.PinsTTL),
		Storage:     c.Storage,
		Replicas:    c.Replicas,
	}
	if c.PinsTTL > 0 && c.PinsMarkerTTL > 0 {
		pins.LimitMarkerTTL = c.PinsMarkerTTL
	}
	return []jetstream.KeyValueConfig{pins, {
		Bucket:       c.CardsBucket,
		Description:  "carddrift: card bodies by digest",
		History:      1,
		TTL:          c.CardsTTL,
		MaxValueSize: c.CardsMaxValueSize,
		Storage:      c.Storage,
		Replicas:     c.Replicas,
	}, {
		Bucket:      c.LeasesBucket,
		Description: "carddrift: live-card lease per card URL",
		History:     1,
		TTL:         none(c.LeasesTTL),
		Storage:     c.Storage,
		Replicas:    c.Replicas,
	}}
}

func (c *Config) objectStoreConfig() jetstream.ObjectStoreConfig {
	return jetstream.ObjectStoreConfig{
		Bucket:      c.CardsObjectBucket,
		Description: "carddrift: card bodies too large for the cards bucket",
		TTL:         c.CardsTTL,
		Storage:     c.Storage,
		Replicas:    c.Replicas,
	}
}
