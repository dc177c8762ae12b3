package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stores are the JetStream-backed stores of one Config, bound by Open or
// Bind on the caller's connection.
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
	objStream, err := js.Stream(ctx, "OBJ_"+cfg.CardsObjectBucket)
	if err != nil {
		return nil, fmt.Errorf("store: bind object store %s: %w", cfg.CardsObjectBucket, err)
	}
	kvCards := NewKVCards(cards, obj, inline)
	kvCards.objStream = objStream
	return &Stores[T]{
		Pins:   NewKVPins[T](pins),
		Cards:  kvCards,
		Leases: NewKVLeases(leases),
	}, nil
}

// Provision creates or updates every stream and bucket of cfg (zero fields
// take their defaults), each bounded in bytes and discarding its oldest
// messages at the bound. It is idempotent; consumers are the worker's
// (Config.LifecycleConsumer). A change the server cannot apply in place
// (say, Storage) fails with the server's error; limits that do not fit the
// server's storage fail with ErrStorageExceeded.
func Provision(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, sc := range cfg.streamConfigs() {
		if err := provisionStream(ctx, js, sc); err != nil {
			return provisionError("stream", sc.Name, err)
		}
	}
	limits := cfg.Limits()
	for _, kc := range cfg.bucketConfigs() {
		if err := provisionBucket(ctx, js, kc, limits["KV_"+kc.Bucket], kc.Bucket == cfg.CardsBucket); err != nil {
			return provisionError("bucket", kc.Bucket, err)
		}
	}
	oc := cfg.objectStoreConfig()
	if err := provisionObjectStore(ctx, js, oc); err != nil {
		return provisionError("object store", oc.Bucket, err)
	}
	return nil
}

// provisionError wraps a failed create or update, marking the server's
// refusal to reserve the byte limits.
func provisionError(what, name string, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrCodeStorageResourcesExceeded ||
		apiErr.ErrorCode == jsErrCodeMemoryResourcesExceeded) {
		return fmt.Errorf("store: provision %s %s: %w: %w", what, name, ErrStorageExceeded, err)
	}
	return fmt.Errorf("store: provision %s %s: %w", what, name, err)
}

// provisionStream creates the stream sc names if it is missing, or brings
// the fields sc sets to sc's values, updating the stream only when one
// differs (a restart with the same Config sends no update). Fields sc leaves
// zero keep what the server has (its defaults, or an operator's change).
func provisionStream(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) error {
	create := func() error {
		_, err := js.CreateStream(ctx, sc)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil
		}
		return err
	}
	return provisionBucketStream(ctx, js, sc.Name, create, func(want *jetstream.StreamConfig) {
		want.Description = sc.Description
		want.Subjects = sc.Subjects
		want.Retention = sc.Retention
		want.Discard = sc.Discard
		want.MaxAge = sc.MaxAge
		want.MaxBytes = sc.MaxBytes
		if sc.Duplicates != 0 {
			want.Duplicates = sc.Duplicates
		}
		want.MaxMsgSize = sc.MaxMsgSize
		if want.MaxMsgSize == 0 {
			want.MaxMsgSize = -1
		}
		want.Storage = sc.Storage
		want.Replicas = sc.Replicas
		want.SubjectTransform = sc.SubjectTransform
	})
}

// provisionBucket creates the KV bucket if it is missing (nats.go makes
// the stream a bucket needs), then brings its stream to what kc says, plus
// what nats.go's KV config cannot say: the byte limit with DiscardOld (a
// full bucket drops its least recently written keys instead of refusing
// writes), and, when ttl is set, per-message TTLs (CardsGC's delete
// markers expire). It updates the stream only when something differs.
func provisionBucket(ctx context.Context, js jetstream.JetStream, kc jetstream.KeyValueConfig, maxBytes int64, ttl bool) error {
	kc.MaxBytes = maxBytes
	create := func() error { _, err := js.CreateKeyValue(ctx, kc); return err }
	return provisionBucketStream(ctx, js, "KV_"+kc.Bucket, create, func(want *jetstream.StreamConfig) {
		want.Description = kc.Description
		want.MaxMsgsPerSubject = int64(max(kc.History, 1))
		want.MaxAge = kc.TTL
		want.MaxBytes = maxBytes
		want.MaxMsgSize = kc.MaxValueSize
		if want.MaxMsgSize == 0 {
			want.MaxMsgSize = -1
		}
		want.Storage = kc.Storage
		want.Replicas = max(kc.Replicas, 1)
		want.Discard = jetstream.DiscardOld
		// nats.go's duplicate window for a bucket: 2m, or the TTL if shorter.
		want.Duplicates = 2 * time.Minute
		if kc.TTL > 0 && kc.TTL < want.Duplicates {
			want.Duplicates = kc.TTL
		}
		want.SubjectDeleteMarkerTTL = kc.LimitMarkerTTL
		// The server cannot turn message TTLs off once on: leave them on.
		want.AllowMsgTTL = want.AllowMsgTTL || ttl || kc.LimitMarkerTTL > 0
	})
}

// provisionObjectStore is provisionBucket for the Object Store.
func provisionObjectStore(ctx context.Context, js jetstream.JetStream, oc jetstream.ObjectStoreConfig) error {
	create := func() error { _, err := js.CreateObjectStore(ctx, oc); return err }
	return provisionBucketStream(ctx, js, "OBJ_"+oc.Bucket, create, func(want *jetstream.StreamConfig) {
		want.Description = oc.Description
		want.MaxAge = oc.TTL
		want.MaxBytes = oc.MaxBytes
		want.Storage = oc.Storage
		want.Replicas = max(oc.Replicas, 1)
		want.Discard = jetstream.DiscardOld
		want.AllowMsgTTL = true // CardsGC's rolled-up chunk subjects expire
	})
}

// provisionBucketStream creates a bucket whose stream name is missing
// (create; nats.go makes the stream), then updates the stream to what adjust
// makes of its config, only when something differs.
func provisionBucketStream(ctx context.Context, js jetstream.JetStream, name string, create func() error, adjust func(want *jetstream.StreamConfig)) error {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if err := create(); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return err
		}
		s, err = js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// Created (by this call, or by another worker provisioning at
			// the same time: "already in use"), yet not found: a stream
			// whose replicas a cluster is still placing.
			return fmt.Errorf("%w: %w", errStreamForming, err)
		}
	}
	if err != nil {
		return err
	}
	have := s.CachedInfo().Config
	want := have
	adjust(&want)
	if reflect.DeepEqual(want, have) {
		return nil
	}
	_, err = js.UpdateStream(ctx, want)
	return err
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
	pins.MaxBytes = c.maxBytes("PinsMaxBytes")
	return []jetstream.KeyValueConfig{pins, {
		Bucket:       c.CardsBucket,
		MaxBytes:     c.maxBytes("CardsMaxBytes"),
		Description:  "carddrift: card bodies by digest",
		History:      1,
		TTL:          c.CardsTTL,
		MaxValueSize: c.CardsMaxValueSize,
		Storage:      c.Storage,
		Replicas:     c.Replicas,
	}, {
		Bucket:      c.LeasesBucket,
		Description: "carddrift: live-card lease per card URL",
		MaxBytes:    c.maxBytes("LeasesMaxBytes"),
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
		MaxBytes:    c.maxBytes("CardsObjectMaxBytes"),
		TTL:         c.CardsTTL,
		Storage:     c.Storage,
		Replicas:    c.Replicas,
	}
}
