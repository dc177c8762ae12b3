package store

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Default names and knobs; DefaultConfig and SetDefaults apply them.
const (
	DefaultLifecycleStream   = "A2A_TASKS"
	DefaultLifecycleSubjects = "a2a.task.>"
	DefaultEventsStream      = "CARD_EVENTS"
	DefaultEventsSubjects    = "card.>"
	DefaultDLQStream         = "CARDDRIFT_DLQ"
	DefaultDLQSubjects       = "carddrift.dlq.>"
	DefaultConsumer          = "carddrift-worker"
	DefaultPinsBucket        = "carddrift-pins"
	DefaultCardsBucket       = "carddrift-cards"
	DefaultCardsObjectBucket = "carddrift-cards-large"
	DefaultLeasesBucket      = "carddrift-leases"

	DefaultReplicas          = 1
	DefaultLifecycleMaxAge   = 7 * 24 * time.Hour
	DefaultEventsMaxAge      = 7 * 24 * time.Hour
	DefaultDLQMaxAge         = 30 * 24 * time.Hour
	DefaultDuplicates        = 2 * time.Minute
	DefaultAckWait           = 30 * time.Second
	DefaultMaxDeliver        = 10
	DefaultMaxAckPending     = 1000
	DefaultPinsTTL           = 24 * time.Hour
	DefaultPinsMarkerTTL     = 15 * time.Minute
	DefaultLeasesTTL         = 24 * time.Hour
	DefaultCardsMaxValueSize = 1 << 20 // the server's default max_payload

	// InlineHeadroom is what DefaultConfig keeps free below CardsMaxValueSize
	// for the message headers a KV write carries.
	InlineHeadroom = 1 << 10

	// MaxPartitions bounds Config.Partitions.
	MaxPartitions = 1024
)

// Config names and sizes every stream, consumer and bucket carddrift uses.
// The zero value of a field means its default (SetDefaults fills them in);
// for durations where "none" is meaningful, a negative value means none.
// Build one with DefaultConfig, change what you need, then Validate.
type Config struct {
	// Replicas of every stream and bucket: 1 (default), 3 for a 3-node
	// cluster; at most 5.
	Replicas int
	// Storage of every stream and bucket: jetstream.FileStorage (the zero
	// value, default) or jetstream.MemoryStorage. See ParseStorage.
	Storage jetstream.StorageType

	// LifecycleStream holds the inbound task-lifecycle CloudEvents
	// (default "A2A_TASKS"), on LifecycleSubjects (default "a2a.task.>"; must
	// end in ".>"). Clients publish to <prefix>.<kind>.<taskId>.
	LifecycleStream   string
	LifecycleSubjects string
	// LifecycleMaxAge is how long lifecycle events are kept for replay
	// (default 7 days; negative: forever).
	LifecycleMaxAge time.Duration
	// LifecycleDuplicates is the Nats-Msg-Id dedup window (default 2m).
	LifecycleDuplicates time.Duration
	// Partitions, when > 0, adds a subject transform so that the stored
	// subject of <prefix>.<kind>.<taskId> is <prefix>.<kind>.<taskId>.<p>,
	// p = PartitionOf(taskId token) in [0, Partitions): every event of a
	// task lands in the same partition, and one consumer per partition gives
	// per-task ordering across workers. With partitions the stream accepts
	// only <prefix>.*.* (a publish to any other shape fails with no
	// responders instead of being stored where no consumer reads it).
	// Changing Partitions on a live stream does not move stored messages.
	Partitions int

	// ConsumerName is the durable name of the lifecycle pull consumer
	// (default "carddrift-worker"; with partitions "<name>-p<N>").
	ConsumerName string
	// AckWait before an unacked event is redelivered (default 30s).
	AckWait time.Duration
	// MaxDeliver is how often an event is delivered before it is given up
	// (default 10; negative: unlimited).
	MaxDeliver int
	// MaxAckPending bounds the unacked events across all workers of one
	// consumer (default 1000).
	MaxAckPending int
	// BackOff, if set, replaces AckWait for successive redeliveries; it must
	// be shorter than MaxDeliver.
	BackOff []time.Duration

	// EventsStream holds the outbound card.* events (default "CARD_EVENTS")
	// on EventsSubjects (default "card.>").
	EventsStream   string
	EventsSubjects string
	// EventsMaxAge (default 7 days; negative: forever).
	EventsMaxAge time.Duration
	// EventsDuplicates is the Nats-Msg-Id window that makes card.drift
	// publish-once (default 2m).
	EventsDuplicates time.Duration

	// DLQStream holds events a worker gave up on (default "CARDDRIFT_DLQ") on
	// DLQSubjects (default "carddrift.dlq.>").
	DLQStream   string
	DLQSubjects string
	// DLQMaxAge (default 30 days; negative: forever).
	DLQMaxAge time.Duration

	// PinsBucket is the KV bucket of pins (default "carddrift-pins").
	PinsBucket string
	// PinsTTL expires a pin this long after its last write (default 24h;
	// negative: never).
	PinsTTL time.Duration
	// PinsMarkerTTL is how long the marker left by a TTL expiry is kept, so
	// that watches (and so CachedPins) see expiries (default 15m; negative:
	// no markers, expiries are silent). Needs nats-server 2.11 or later.
	PinsMarkerTTL time.Duration

	// CardsBucket is the KV bucket of card bodies by digest (default
	// "carddrift-cards"); CardsObjectBucket the Object Store for bodies
	// larger than CardsInlineMax (default "carddrift-cards-large").
	CardsBucket       string
	CardsObjectBucket string
	// CardsTTL expires card bodies (default and zero: never; cards are the
	// evidence replay reads and are few).
	CardsTTL time.Duration
	// CardsMaxValueSize is the KV bucket's max value size in bytes (default
	// 1 MiB).
	CardsMaxValueSize int32
	// CardsInlineMax is the largest body stored in the KV bucket itself;
	// larger ones go to the Object Store (default CardsMaxValueSize minus
	// InlineHeadroom; tests set it small). The connection's max payload
	// lowers it further at run time.
	CardsInlineMax int

	// LeasesBucket is the KV bucket of leases by card URL (default
	// "carddrift-leases").
	LeasesBucket string
	// LeasesTTL expires a lease this long after its last write (default 24h;
	// negative: never).
	LeasesTTL time.Duration
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
	setStr := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setDur := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setInt(&c.Replicas, DefaultReplicas)
	setStr(&c.LifecycleStream, DefaultLifecycleStream)
	setStr(&c.LifecycleSubjects, DefaultLifecycleSubjects)
	setDur(&c.LifecycleMaxAge, DefaultLifecycleMaxAge)
	setDur(&c.LifecycleDuplicates, DefaultDuplicates)
	setStr(&c.ConsumerName, DefaultConsumer)
	setDur(&c.AckWait, DefaultAckWait)
	setInt(&c.MaxDeliver, DefaultMaxDeliver)
	setInt(&c.MaxAckPending, DefaultMaxAckPending)
	setStr(&c.EventsStream, DefaultEventsStream)
	setStr(&c.EventsSubjects, DefaultEventsSubjects)
	setDur(&c.EventsMaxAge, DefaultEventsMaxAge)
	setDur(&c.EventsDuplicates, DefaultDuplicates)
	setStr(&c.DLQStream, DefaultDLQStream)
	setStr(&c.DLQSubjects, DefaultDLQSubjects)
	setDur(&c.DLQMaxAge, DefaultDLQMaxAge)
	setStr(&c.PinsBucket, DefaultPinsBucket)
	setDur(&c.PinsTTL, DefaultPinsTTL)
	setDur(&c.PinsMarkerTTL, DefaultPinsMarkerTTL)
	setStr(&c.CardsBucket, DefaultCardsBucket)
	setStr(&c.CardsObjectBucket, DefaultCardsObjectBucket)
	if c.CardsMaxValueSize == 0 {
		c.CardsMaxValueSize = DefaultCardsMaxValueSize
	}
	if c.CardsInlineMax == 0 {
		c.CardsInlineMax = max(int(c.CardsMaxValueSize)-InlineHeadroom, 1)
	}
	setStr(&c.LeasesBucket, DefaultLeasesBucket)
	setDur(&c.LeasesTTL, DefaultLeasesTTL)
}

var (
	bucketRe     = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	streamNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	subjectRe    = regexp.MustCompile(`^[^\s.*>]+(\.[^\s.*>]+)*\.>$`)
)

// Validate reports the first invalid field as a *ConfigError. Call it after
// SetDefaults: a zero name or size is invalid.
func (c *Config) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &ConfigError{Field: field, Value: v, Reason: reason}
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return bad("Replicas", c.Replicas, "must be 1 to 5")
	}
	if c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage {
		return bad("Storage", int(c.Storage), "must be file or memory")
	}
	streams := []struct{ field, v string }{
		{"LifecycleStream", c.LifecycleStream},
		{"EventsStream", c.EventsStream},
		{"DLQStream", c.DLQStream},
	}
	seen := map[string]string{}
	for _, s := range streams {
		if !streamNameRe.MatchString(s.v) {
			return bad(s.field, s.v, "must be letters, digits, '-' or '_'")
		}
		if strings.HasPrefix(s.v, "KV_") || strings.HasPrefix(s.v, "OBJ_") {
			return bad(s.field, s.v, "KV_ and OBJ_ are reserved for buckets")
		}
		if other, dup := seen[s.v]; dup {
			return bad(s.field, s.v, "same name as "+other)
		}
		seen[s.v] = s.field
	}
	subjects := []struct{ field, v string }{
		{"LifecycleSubjects", c.LifecycleSubjects},
		{"EventsSubjects", c.EventsSubjects},
		{"DLQSubjects", c.DLQSubjects},
	}
	for i, s := range subjects {
		if !subjectRe.MatchString(s.v) || strings.HasPrefix(s.v, "$") {
			return bad(s.field, s.v, `must be literal tokens followed by ".>", e.g. "a2a.task.>"`)
		}
		for _, o := range subjects[:i] {
			a, b := strings.TrimSuffix(s.v, ">"), strings.TrimSuffix(o.v, ">")
			if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
				return bad(s.field, s.v, "overlaps "+o.field)
			}
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"LifecycleMaxAge", c.LifecycleMaxAge}, {"EventsMaxAge", c.EventsMaxAge}, {"DLQMaxAge", c.DLQMaxAge},
		{"PinsTTL", c.PinsTTL}, {"LeasesTTL", c.LeasesTTL},
	} {
		if d.v > 0 && d.v < time.Second {
			return bad(d.field, d.v, "must be at least 1s, or negative for none")
		}
	}
	if c.CardsTTL < 0 || (c.CardsTTL > 0 && c.CardsTTL < time.Second) {
		return bad("CardsTTL", c.CardsTTL, "must be 0 (never) or at least 1s")
	}
	if c.PinsMarkerTTL > 0 && c.PinsMarkerTTL < time.Second {
		return bad("PinsMarkerTTL", c.PinsMarkerTTL, "must be at least 1s, or negative for none")
	}
	for _, d := range []struct {
		field       string
		dup, maxAge time.Duration
	}{
		{"LifecycleDuplicates", c.LifecycleDuplicates, c.LifecycleMaxAge},
		{"EventsDuplicates", c.EventsDuplicates, c.EventsMaxAge},
	} {
		if d.dup < 100*time.Millisecond {
			return bad(d.field, d.dup, "must be at least 100ms")
		}
		if d.maxAge > 0 && d.dup > d.maxAge {
			return bad(d.field, d.dup, "must not exceed the stream's max age")
		}
	}
	if c.Partitions < 0 || c.Partitions > MaxPartitions {
		return bad("Partitions", c.Partitions, "must be 0 (none) to "+strconv.Itoa(MaxPartitions))
	}
	if !streamNameRe.MatchString(c.ConsumerName) {
		return bad("ConsumerName", c.ConsumerName, "must be letters, digits, '-' or '_'")
	}
	if c.AckWait < time.Second {
		return bad("AckWait", c.AckWait, "must be at least 1s")
	}
	if c.MaxDeliver == 0 || c.MaxDeliver < -1 {
		return bad("MaxDeliver", c.MaxDeliver, "must be positive, or -1 for unlimited")
	}
	if c.MaxAckPending < 1 {
		return bad("MaxAckPending", c.MaxAckPending, "must be positive")
	}
	if len(c.BackOff) > 0 && c.MaxDeliver > 0 && len(c.BackOff) >= c.MaxDeliver {
		return bad("BackOff", c.BackOff, "must have fewer steps than MaxDeliver")
	}
	for _, d := range c.BackOff {
		if d <= 0 {
			return bad("BackOff", c.BackOff, "steps must be positive")
		}
	}
	buckets := []struct{ field, v string }{
		{"PinsBucket", c.PinsBucket},
		{"CardsBucket", c.CardsBucket},
		{"LeasesBucket", c.LeasesBucket},
	}
	seen = map[string]string{}
	for _, b := range buckets {
		if !bucketRe.MatchString(b.v) {
			return bad(b.field, b.v, "must be letters, digits, '-' or '_'")
		}
		if other, dup := seen[b.v]; dup {
			return bad(b.field, b.v, "same bucket as "+other)
		}
		seen[b.v] = b.field
	}
	if !bucketRe.MatchString(c.CardsObjectBucket) {
		return bad("CardsObjectBucket", c.CardsObjectBucket, "must be letters, digits, '-' or '_'")
	}
	if c.CardsMaxValueSize < 2*InlineHeadroom {
		return bad("CardsMaxValueSize", c.CardsMaxValueSize, fmt.Sprintf("must be at least %d", 2*InlineHeadroom))
	}
	if c.CardsInlineMax < 1 || c.CardsInlineMax > int(c.CardsMaxValueSize)-InlineHeadroom {
		return bad("CardsInlineMax", c.CardsInlineMax, fmt.Sprintf("must be 1 to CardsMaxValueSize-%d", InlineHeadroom))
	}
	return nil
}

// lifecyclePrefix is LifecycleSubjects without the trailing ".>".
func (c *Config) lifecyclePrefix() string { return strings.TrimSuffix(c.LifecycleSubjects, ".>") }

// LifecycleFilter returns the subject filter of the events of partition p as
// they are stored: LifecycleSubjects without partitions, else
// "<prefix>.*.*.<p>". It panics if p is out of range (p must be 0 without
// partitions, in [0, Partitions) with them).
func (c *Config) LifecycleFilter(p int) string {
	if c.Partitions == 0 {
		if p != 0 {
			panic(fmt.Sprintf("store: partition %d of an unpartitioned stream", p))
		}
		return c.LifecycleSubjects
	}
	if p < 0 || p >= c.Partitions {
		panic(fmt.Sprintf("store: partition %d out of range [0, %d)", p, c.Partitions))
	}
	return c.lifecyclePrefix() + ".*.*." + strconv.Itoa(p)
}

// ConsumerNameOf returns the durable name of partition p's consumer:
// ConsumerName without partitions, "<ConsumerName>-p<p>" with them.
func (c *Config) ConsumerNameOf(p int) string {
	if c.Partitions == 0 {
		return c.ConsumerName
	}
	return c.ConsumerName + "-p" + strconv.Itoa(p)
}

// LifecycleConsumer returns the config of the durable pull consumer that
// workers share for partition p (0 without partitions): explicit acks,
// AckWait, MaxDeliver, MaxAckPending and BackOff from c, filtered to the
// partition, delivering from the start of the stream. The worker creates it
// with js.CreateOrUpdateConsumer(ctx, c.LifecycleStream, cc). It panics if p
// is out of range, as LifecycleFilter does.
func (c *Config) LifecycleConsumer(p int) jetstream.ConsumerConfig {
	name := c.ConsumerNameOf(p)
	return jetstream.ConsumerConfig{
		Name:          name,
		Durable:       name,
		Description:   "carddrift workers: task lifecycle events",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    c.MaxDeliver,
		MaxAckPending: c.MaxAckPending,
		BackOff:       append([]time.Duration(nil), c.BackOff...),
		FilterSubject: c.LifecycleFilter(p),
		Replicas:      c.Replicas,
		MemoryStorage: c.Storage == jetstream.MemoryStorage,
	}
}

// LifecycleConsumers returns LifecycleConsumer of every partition (one
// config without partitions).
func (c *Config) LifecycleConsumers() []jetstream.ConsumerConfig {
	n := max(c.Partitions, 1)
	out := make([]jetstream.ConsumerConfig, n)
	for p := range n {
		out[p] = c.LifecycleConsumer(p)
	}
	return out
}

// PartitionOf returns the partition the stream's subject transform puts a
// task in, given the task id token as it appears in the subject (after the
// events package's encoding). It mirrors nats-server's partition(n, 2):
// FNV-1a 32 of the token, modulo Partitions. It returns 0 without
// partitions.
func (c *Config) PartitionOf(taskToken string) int {
	if c.Partitions == 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(taskToken))
	return int(h.Sum32() % uint32(c.Partitions))
}

// ParseStorage reads "file" or "memory" (case-insensitive; "" is file), for
// flags and environment variables.
func ParseStorage(s string) (jetstream.StorageType, error) {
	switch strings.ToLower(s) {
	case "", "file":
		return jetstream.FileStorage, nil
	case "memory", "mem":
		return jetstream.MemoryStorage, nil
	}
	return 0, &ConfigError{Field: "Storage", Value: s, Reason: `must be "file" or "memory"`}
}
