package store

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store/topology"
)

// Default bucket names and knobs; DefaultConfig and SetDefaults apply them
// (the stream and consumer defaults are the topology's, topology.Topology).
const (
	DefaultPinsBucket        = "carddrift-pins"
	DefaultCardsBucket       = "carddrift-cards"
	DefaultCardsObjectBucket = "carddrift-cards-large"
	DefaultLeasesBucket      = "carddrift-leases"

	DefaultReplicas          = 1
	DefaultPinsTTL           = 24 * time.Hour
	DefaultPinsMarkerTTL     = 15 * time.Minute
	DefaultLeasesTTL         = 24 * time.Hour
	DefaultCardsMaxValueSize = 1 << 20 // the server's default max_payload

	// InlineHeadroom is what DefaultConfig keeps free below CardsMaxValueSize
	// for the message headers a KV write carries.
	InlineHeadroom = 1 << 10

	// DefaultStorageLimit is the default Config.StorageLimit with file
	// storage: 6 GiB, which leaves 4 GiB of the shipped cluster's
	// max_file_store (10GB, that is 10 GiB, per server) for the planners'
	// copy of the card stream (2 GiB) and headroom.
	DefaultStorageLimit = 6 << 30
	// DefaultMemoryStorageLimit is the default Config.StorageLimit with
	// memory storage (1 GiB: tests, the demo and small machines, where the
	// server reserves every byte limit against its max_memory_store).
	DefaultMemoryStorageLimit = 1 << 30
	// MinMaxBytes is the smallest byte limit of a stream or bucket: one
	// message of the server's default max payload must fit.
	MinMaxBytes = 1 << 20
)

// StorageShares says how Config.StorageLimit is split, in 24ths, among
// the streams and buckets whose own limit is left zero. The shares add up
// to 24: the limit is the sum of every byte limit, which is what the
// server reserves of its storage (per server, whatever the replicas).
var StorageShares = []struct {
	// Field is the Config field the share sets.
	Field string
	// Of24 is the share, in 24ths of StorageLimit.
	Of24 int64
}{
	{"LifecycleMaxBytes", 8},   // A2A_TASKS: 1/3, the history replay reads
	{"EventsMaxBytes", 4},      // CARD_EVENTS: 1/6
	{"DLQMaxBytes", 2},         // CARDDRIFT_DLQ: 1/12
	{"PinsMaxBytes", 4},        // KV pins: 1/6
	{"CardsMaxBytes", 2},       // KV cards: 1/12
	{"CardsObjectMaxBytes", 2}, // OBJ cards-large: 1/12
	{"LeasesMaxBytes", 2},      // KV leases: 1/12
}

// Config names and sizes every stream, consumer and bucket carddrift uses:
// the Topology that clients, planners and workers share (its fields are
// promoted) and the buckets that are carddrift's own state. The zero value
// of a field means its default (SetDefaults); for durations where "none" is
// meaningful, a negative value means none. Build one with DefaultConfig,
// change what you need, then Validate.
type Config struct {
	// Replicas (1 to 5: 3 for a 3-node cluster) and Storage (file, the zero
	// value, or memory: ParseStorage) of every stream and bucket.
	Replicas int
	Storage  jetstream.StorageType

	// StorageLimit is the sum of the byte limits of every stream and
	// bucket (zero: the default of the Storage, StorageLimitOf). Each limit
	// left zero takes its share of it (StorageShares) when it is used; a
	// limit set explicitly is used as it is. Limits says what is in effect.
	// At a limit the oldest messages go first (DiscardOld).
	StorageLimit int64

	// Topology: the streams, partitions and consumers (topology.go places
	// them).
	topology.Topology

	// PinsBucket is the KV bucket of pins; PinsTTL expires a pin this long
	// after its last write (negative: never).
	PinsBucket string
	PinsTTL    time.Duration
	// PinsMarkerTTL is how long the bucket keeps the marker a TTL expiry
	// leaves (default 15m; negative: no markers). Needs nats-server 2.11 or
	// later.
	PinsMarkerTTL time.Duration
	// PinsMaxBytes bounds the pins bucket (zero: its share of
	// StorageLimit). At the bound the least recently written pins are
	// dropped: their tasks are judged as tasks without a pin.
	PinsMaxBytes int64

	// CardsBucket is the KV bucket of card bodies by digest (default
	// "carddrift-cards"); CardsObjectBucket the Object Store for bodies
	// larger than CardsInlineMax (default "carddrift-cards-large").
	CardsBucket       string
	CardsObjectBucket string
	// CardsTTL expires card bodies (default and zero: never; cards are the
	// evidence replay reads, and CardsGC removes those nothing references).
	CardsTTL          time.Duration
	CardsMaxValueSize int32 // the KV bucket's max value size in bytes
	// CardsInlineMax is the largest body stored in the KV bucket itself;
	// larger ones go to the Object Store (default CardsMaxValueSize minus
	// InlineHeadroom; tests set it small). The connection's max payload
	// lowers it further at run time.
	CardsInlineMax int
	// CardsMaxBytes and CardsObjectMaxBytes bound the cards bucket and the
	// large-cards Object Store (default: their shares of StorageLimit). At
	// the bound the oldest bodies are dropped (a pin whose body is gone is
	// judged as one pinned by digest alone: pinned-card-unknown); CardsGC
	// removes the bodies nothing references long before.
	CardsMaxBytes       int64
	CardsObjectMaxBytes int64

	// LeasesBucket is the KV bucket of leases by card URL; LeasesTTL
	// expires a lease this long after its last write (negative: never).
	LeasesBucket string
	LeasesTTL    time.Duration
	// LeasesMaxBytes bounds the leases bucket (default: its share of
	// StorageLimit); the least recently written leases go first (their
	// cards are fetched again).
	LeasesMaxBytes int64
}

// DefaultConfig returns a Config with every default applied.
func DefaultConfig() Config {
	var c Config
	c.SetDefaults()
	return c
}

// SetDefaults fills every zero field with its default. It leaves set fields
// alone, including negative durations that mean "none".
func (c *Config) SetDefaults() {
	setDefault(&c.Replicas, DefaultReplicas)
	c.Topology.SetDefaults()
	setDefault(&c.PinsBucket, DefaultPinsBucket)
	setDefault(&c.PinsTTL, DefaultPinsTTL)
	setDefault(&c.PinsMarkerTTL, DefaultPinsMarkerTTL)
	setDefault(&c.CardsBucket, DefaultCardsBucket)
	setDefault(&c.CardsObjectBucket, DefaultCardsObjectBucket)
	setDefault(&c.CardsMaxValueSize, DefaultCardsMaxValueSize)
	if c.CardsInlineMax == 0 {
		c.CardsInlineMax = max(int(c.CardsMaxValueSize)-InlineHeadroom, 1)
	}
	setDefault(&c.LeasesBucket, DefaultLeasesBucket)
	setDefault(&c.LeasesTTL, DefaultLeasesTTL)
}

// StorageLimitOf is the StorageLimit in effect: StorageLimit, or when zero
// DefaultStorageLimit (DefaultMemoryStorageLimit with memory storage).
func (c *Config) StorageLimitOf() int64 {
	switch {
	case c.StorageLimit != 0:
		return c.StorageLimit
	case c.Storage == jetstream.MemoryStorage:
		return DefaultMemoryStorageLimit
	}
	return DefaultStorageLimit
}

// maxBytes is the byte limit in effect of a StorageShares field: the
// field, or when zero its share of StorageLimitOf (the lifecycle stream
// takes the rounding remainder too).
func (c *Config) maxBytes(field string) int64 {
	if v := *c.maxBytesField(field); v != 0 {
		return v
	}
	total := c.StorageLimitOf()
	unit := total / 24
	for _, sh := range StorageShares {
		if sh.Field == field {
			share := unit * sh.Of24
			if field == "LifecycleMaxBytes" {
				share += total - 24*unit
			}
			return share
		}
	}
	panic("store: no byte limit " + field)
}

// maxBytesField returns the byte-limit field named by a StorageShares entry
// (the Topology's promoted fields included).
func (c *Config) maxBytesField(name string) *int64 {
	f := reflect.ValueOf(c).Elem().FieldByName(name)
	if !f.IsValid() {
		panic("store: no byte limit " + name)
	}
	return f.Addr().Interface().(*int64)
}

// Limits returns the byte limit in effect of every stream carddrift
// creates, by stream name (buckets under their streams' names, KV_<bucket>
// and OBJ_<bucket>), of a defaulted Config: each limit set, or its share of
// StorageLimitOf.
func (c *Config) Limits() map[string]int64 {
	return map[string]int64{
		c.LifecycleStream:            c.maxBytes("LifecycleMaxBytes"),
		c.EventsStream:               c.maxBytes("EventsMaxBytes"),
		c.DLQStream:                  c.maxBytes("DLQMaxBytes"),
		"KV_" + c.PinsBucket:         c.maxBytes("PinsMaxBytes"),
		"KV_" + c.CardsBucket:        c.maxBytes("CardsMaxBytes"),
		"KV_" + c.LeasesBucket:       c.maxBytes("LeasesMaxBytes"),
		"OBJ_" + c.CardsObjectBucket: c.maxBytes("CardsObjectMaxBytes"),
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// checkName reports a stream, consumer or bucket name other than letters,
// digits, '-' and '_' (topology.CheckName).
func checkName(field, v string) error {
	if err := topology.CheckName(field, v); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Validate reports the first invalid field, the Topology's included, as a
// *ConfigError (wrapped, its message prefixed "store: "). Call it after
// SetDefaults: a zero name or size is invalid.
func (c *Config) Validate() error {
	if c.Replicas < 1 || c.Replicas > 5 {
		return invalid("Replicas", c.Replicas, "must be 1 to 5")
	}
	if c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage {
		return invalid("Storage", int(c.Storage), "must be file or memory")
	}
	if c.StorageLimit != 0 && c.StorageLimit < 24*MinMaxBytes/2 {
		return invalid("StorageLimit", c.StorageLimit, "must be 0 (the default) or at least "+FormatSize(24*MinMaxBytes/2))
	}
	for _, sh := range StorageShares {
		if v := c.maxBytes(sh.Field); v < MinMaxBytes {
			return invalid(sh.Field, v, "must be at least "+FormatSize(MinMaxBytes))
		}
	}
	if lc := c.maxBytes("LifecycleMaxBytes"); c.LifecycleMaxMsgSize < 1<<10 || int64(c.LifecycleMaxMsgSize) > lc {
		return invalid("LifecycleMaxMsgSize", c.LifecycleMaxMsgSize, "must be at least 1KiB and at most the lifecycle stream's byte limit")
	}
	if err := c.Topology.Validate(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"PinsTTL", c.PinsTTL}, {"LeasesTTL", c.LeasesTTL}, {"PinsMarkerTTL", c.PinsMarkerTTL}} {
		if d.v > 0 && d.v < time.Second {
			return invalid(d.field, d.v, "must be at least 1s, or negative for none")
		}
	}
	if c.CardsTTL < 0 || (c.CardsTTL > 0 && c.CardsTTL < time.Second) {
		return invalid("CardsTTL", c.CardsTTL, "must be 0 (never) or at least 1s")
	}
	buckets := map[string]string{}
	for _, b := range []struct{ field, v string }{
		{"PinsBucket", c.PinsBucket},
		{"CardsBucket", c.CardsBucket},
		{"LeasesBucket", c.LeasesBucket},
	} {
		if err := checkName(b.field, b.v); err != nil {
			return err
		}
		if other, dup := buckets[b.v]; dup {
			return invalid(b.field, b.v, "same bucket as "+other)
		}
		buckets[b.v] = b.field
	}
	if err := checkName("CardsObjectBucket", c.CardsObjectBucket); err != nil {
		return err
	}
	if c.CardsMaxValueSize < 2*InlineHeadroom {
		return invalid("CardsMaxValueSize", c.CardsMaxValueSize, fmt.Sprintf("must be at least %d", 2*InlineHeadroom))
	}
	if c.CardsInlineMax < 1 || c.CardsInlineMax > int(c.CardsMaxValueSize)-InlineHeadroom {
		return invalid("CardsInlineMax", c.CardsInlineMax, fmt.Sprintf("must be 1 to CardsMaxValueSize-%d", InlineHeadroom))
	}
	if v := c.maxBytes("CardsMaxBytes"); v < int64(c.CardsMaxValueSize) {
		return invalid("CardsMaxBytes", v, "must be at least CardsMaxValueSize")
	}
	return nil
}

// invalid returns a *ConfigError, its message prefixed "store: ".
func invalid(field string, v any, reason string) error {
	return fmt.Errorf("store: %w", &ConfigError{Field: field, Value: v, Reason: reason})
}

// none maps a negative "none" duration to JetStream's 0 (no limit).
func none(d time.Duration) time.Duration { return max(d, 0) }

// ParseStorage reads "file" or "memory" (case-insensitive; "" is file), for
// flags and environment variables.
func ParseStorage(s string) (jetstream.StorageType, error) {
	switch strings.ToLower(s) {
	case "", "file":
		return jetstream.FileStorage, nil
	case "memory", "mem":
		return jetstream.MemoryStorage, nil
	}
	return 0, invalid("Storage", s, `must be "file" or "memory"`)
}
