package topology

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The default subjects of the three streams. The lifecycle and events
// streams' are the filters that cover every event of the public contract
// (events.InboundSubjects and events.OutboundSubjects; events'
// TestTopologyDefaultsCoverSubjects holds them to it).
const (
	DefaultLifecycleSubjects = "a2a.task.>"
	DefaultEventsSubjects    = "card.>"
	DefaultDLQSubjects       = "carddrift.dlq.>"
)

// Default stream and consumer names and knobs of the Topology;
// Topology.SetDefaults applies them.
const (
	DefaultLifecycleStream = "A2A_TASKS"
	DefaultEventsStream    = "CARD_EVENTS"
	DefaultDLQStream       = "CARDDRIFT_DLQ"
	DefaultConsumer        = "carddrift-worker"

	DefaultLifecycleMaxAge = 7 * 24 * time.Hour
	DefaultEventsMaxAge    = 7 * 24 * time.Hour
	DefaultDLQMaxAge       = 30 * 24 * time.Hour
	DefaultDuplicates      = 2 * time.Minute
	DefaultAckWait         = 30 * time.Second
	DefaultMaxDeliver      = 10
	DefaultMaxAckPending   = 1000

	// MaxPartitions bounds Topology.Partitions.
	MaxPartitions = 1024

	// DeadLetterHeadroom is what a dead letter may add to the event it
	// copies (the worker's Carddrift-* headers: reason, error text of at
	// most 1 KiB, original subject, sequence, message id).
	DeadLetterHeadroom = 4 << 10
	// DefaultLifecycleMaxMsgSize is the default Topology.LifecycleMaxMsgSize.
	DefaultLifecycleMaxMsgSize = 1<<20 - DeadLetterHeadroom
)

// Topology is what clients, planners and workers agree on: the three
// streams and their subjects, how the lifecycle stream is partitioned, and
// the durable consumers the workers share. It is the one owner of these
// names; store.Config embeds it (its fields and methods are promoted:
// cfg.LifecycleStream, cfg.ConsumerNames()) and places it — store.Provision
// creates its streams with the Config's storage, replicas and byte limits,
// the worker its consumers (store.Config.LifecycleConsumer). Zero fields
// take their defaults; for durations where "none" is meaningful, a negative
// value means none.
type Topology struct {
	// LifecycleStream holds the inbound task-lifecycle CloudEvents
	// (default "A2A_TASKS"), on LifecycleSubjects (default "a2a.task.>";
	// must end in ".>"). Clients publish to
	// <prefix>.<kind>.<taskId>.
	LifecycleStream   string
	LifecycleSubjects string
	// LifecycleMaxAge is how long lifecycle events are kept for replay
	// (default 7 days; negative: forever).
	LifecycleMaxAge time.Duration
	// LifecycleDuplicates is the Nats-Msg-Id dedup window (default 2m).
	LifecycleDuplicates time.Duration
	// LifecycleMaxBytes bounds the stream's size (zero: its share of
	// store.Config.StorageLimit, see store.StorageShares); when it is
	// reached the oldest events are discarded, never a publish refused.
	LifecycleMaxBytes int64
	// LifecycleMaxMsgSize is the largest lifecycle event the stream stores,
	// headers included (default DefaultLifecycleMaxMsgSize: the server's
	// default max payload less DeadLetterHeadroom, so that the dead-letter
	// copy of any stored event, which carries more headers, still fits).
	LifecycleMaxMsgSize int32
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
	// MaxDeliver is how often an event is delivered before a worker
	// dead-letters it (default 10; negative: never).
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
	EventsMaxAge   time.Duration // default 7 days; negative: forever
	// EventsDuplicates is the Nats-Msg-Id window that makes card.drift
	// publish-once (default 2m).
	EventsDuplicates time.Duration
	// EventsMaxBytes bounds the stream's size (zero: its share of
	// store.Config.StorageLimit); the oldest events go first.
	EventsMaxBytes int64

	// DLQStream holds events a worker gave up on (default "CARDDRIFT_DLQ") on
	// DLQSubjects (default "carddrift.dlq.>").
	DLQStream   string
	DLQSubjects string
	DLQMaxAge   time.Duration // default 30 days; negative: forever
	// DLQMaxBytes bounds the stream's size (zero: its share of
	// store.Config.StorageLimit); the oldest dead letters go first.
	DLQMaxBytes int64
}

// ConfigError reports an invalid field of a Topology, or of a store.Config
// (store.ConfigError is this type). Test with errors.As. Its message names
// no package: store.Config.Validate prefixes "store: ".
type ConfigError struct {
	Field  string // Go name of the field, e.g. "PinsBucket"
	Value  any    // the offending value
	Reason string // what is wrong with it
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("invalid config %s=%v: %s", e.Field, e.Value, e.Reason)
}

func invalid(field string, v any, reason string) error {
	return &ConfigError{Field: field, Value: v, Reason: reason}
}

// SetDefaults fills every zero field with its default. It leaves set fields
// alone, including negative durations that mean "none".
func (t *Topology) SetDefaults() {
	setDefault(&t.LifecycleStream, DefaultLifecycleStream)
	setDefault(&t.LifecycleSubjects, DefaultLifecycleSubjects)
	setDefault(&t.LifecycleMaxAge, DefaultLifecycleMaxAge)
	setDefault(&t.LifecycleDuplicates, DefaultDuplicates)
	setDefault(&t.LifecycleMaxMsgSize, DefaultLifecycleMaxMsgSize)
	setDefault(&t.ConsumerName, DefaultConsumer)
	setDefault(&t.AckWait, DefaultAckWait)
	setDefault(&t.MaxDeliver, DefaultMaxDeliver)
	setDefault(&t.MaxAckPending, DefaultMaxAckPending)
	setDefault(&t.EventsStream, DefaultEventsStream)
	setDefault(&t.EventsSubjects, DefaultEventsSubjects)
	setDefault(&t.EventsMaxAge, DefaultEventsMaxAge)
	setDefault(&t.EventsDuplicates, DefaultDuplicates)
	setDefault(&t.DLQStream, DefaultDLQStream)
	setDefault(&t.DLQSubjects, DefaultDLQSubjects)
	setDefault(&t.DLQMaxAge, DefaultDLQMaxAge)
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// nameRe is what stream, consumer and bucket names may be.
var nameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// CheckName reports, as a *ConfigError on field, a stream, consumer or
// bucket name other than letters, digits, '-' and '_' (what JetStream
// names may be everywhere).
func CheckName(field, name string) error {
	if !nameRe.MatchString(name) {
		return invalid(field, name, "must be letters, digits, '-' or '_'")
	}
	return nil
}

var subjectRe = regexp.MustCompile(`^[^\s.*>]+(\.[^\s.*>]+)*\.>$`)

// Validate reports the first invalid field of a defaulted Topology as a
// *ConfigError (store.Config.Validate calls it). Byte limits are the
// provisioner's to check.
func (t *Topology) Validate() error {
	streams := []struct{ field, v string }{
		{"LifecycleStream", t.LifecycleStream},
		{"EventsStream", t.EventsStream},
		{"DLQStream", t.DLQStream},
	}
	for i, s := range streams {
		if err := CheckName(s.field, s.v); err != nil {
			return err
		}
		if strings.HasPrefix(s.v, "KV_") || strings.HasPrefix(s.v, "OBJ_") {
			return invalid(s.field, s.v, "KV_ and OBJ_ are reserved for buckets")
		}
		for _, o := range streams[:i] {
			if o.v == s.v {
				return invalid(s.field, s.v, "same name as "+o.field)
			}
		}
	}
	subjects := []struct{ field, v string }{
		{"LifecycleSubjects", t.LifecycleSubjects},
		{"EventsSubjects", t.EventsSubjects},
		{"DLQSubjects", t.DLQSubjects},
	}
	for i, s := range subjects {
		if !subjectRe.MatchString(s.v) || strings.HasPrefix(s.v, "$") {
			return invalid(s.field, s.v, `must be literal tokens followed by ".>", e.g. "a2a.task.>"`)
		}
		for _, o := range subjects[:i] {
			a, b := strings.TrimSuffix(s.v, ">"), strings.TrimSuffix(o.v, ">")
			if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
				return invalid(s.field, s.v, "overlaps "+o.field)
			}
		}
	}
	for _, d := range []struct {
		field       string
		maxAge, dup time.Duration
	}{
		{"Lifecycle", t.LifecycleMaxAge, t.LifecycleDuplicates},
		{"Events", t.EventsMaxAge, t.EventsDuplicates},
		{"DLQ", t.DLQMaxAge, -1},
	} {
		if d.maxAge > 0 && d.maxAge < time.Second {
			return invalid(d.field+"MaxAge", d.maxAge, "must be at least 1s, or negative for none")
		}
		if d.dup == -1 {
			continue
		}
		if d.dup < 100*time.Millisecond {
			return invalid(d.field+"Duplicates", d.dup, "must be at least 100ms")
		}
		if d.maxAge > 0 && d.dup > d.maxAge {
			return invalid(d.field+"Duplicates", d.dup, "must not exceed the stream's max age")
		}
	}
	if t.Partitions < 0 || t.Partitions > MaxPartitions {
		return invalid("Partitions", t.Partitions, "must be 0 (none) to "+strconv.Itoa(MaxPartitions))
	}
	if err := CheckName("ConsumerName", t.ConsumerName); err != nil {
		return err
	}
	if t.AckWait < time.Second {
		return invalid("AckWait", t.AckWait, "must be at least 1s")
	}
	if t.MaxDeliver == 0 || t.MaxDeliver < -1 {
		return invalid("MaxDeliver", t.MaxDeliver, "must be positive, or -1 for unlimited")
	}
	if t.MaxAckPending < 1 {
		return invalid("MaxAckPending", t.MaxAckPending, "must be positive")
	}
	if len(t.BackOff) > 0 && t.MaxDeliver > 0 && len(t.BackOff) >= t.MaxDeliver {
		return invalid("BackOff", t.BackOff, "must have fewer steps than MaxDeliver")
	}
	for _, d := range t.BackOff {
		if d <= 0 {
			return invalid("BackOff", t.BackOff, "steps must be positive")
		}
	}
	return nil
}

func (t *Topology) lifecyclePrefix() string { return strings.TrimSuffix(t.LifecycleSubjects, ".>") }

// LifecycleFilter returns the subject filter of the events of partition p as
// they are stored: LifecycleSubjects without partitions, else
// "<prefix>.*.*.<p>". It panics if p is out of range (p must be 0 without
// partitions, in [0, Partitions) with them).
func (t *Topology) LifecycleFilter(p int) string {
	if t.Partitions == 0 {
		if p != 0 {
			panic(fmt.Sprintf("topology: partition %d of an unpartitioned stream", p))
		}
		return t.LifecycleSubjects
	}
	if p < 0 || p >= t.Partitions {
		panic(fmt.Sprintf("topology: partition %d out of range [0, %d)", p, t.Partitions))
	}
	return t.lifecyclePrefix() + ".*.*." + strconv.Itoa(p)
}

// ConsumerNameOf returns the durable name of partition p's consumer:
// ConsumerName without partitions, "<ConsumerName>-p<p>" with them.
func (t *Topology) ConsumerNameOf(p int) string {
	if t.Partitions == 0 {
		return t.ConsumerName
	}
	return t.ConsumerName + "-p" + strconv.Itoa(p)
}

// ConsumerNames returns ConsumerNameOf every partition (one name without
// partitions).
func (t *Topology) ConsumerNames() []string {
	out := make([]string, max(t.Partitions, 1))
	for p := range out {
		out[p] = t.ConsumerNameOf(p)
	}
	return out
}

// PartitionOf returns the partition the stream's subject transform puts a
// task in, given the task id token as it appears in the subject (Token of
// the task id). It mirrors nats-server's partition(n, 2): FNV-1a 32 of the
// token, modulo Partitions. It returns 0 without partitions.
func (t *Topology) PartitionOf(taskToken string) int {
	if t.Partitions == 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(taskToken))
	return int(h.Sum32() % uint32(t.Partitions))
}

// DeclaredConsumer returns what the topology declares of the durable pull
// consumer that workers share for partition p, placement (replicas,
// storage) left to store.Config.LifecycleConsumer. Deliveries are unlimited:
// the worker dead-letters an event on its MaxDeliver-th delivery itself,
// and only acknowledges it once the dead letter is stored. It panics if p
// is out of range, as LifecycleFilter does.
func (t *Topology) DeclaredConsumer(p int) jetstream.ConsumerConfig {
	name := t.ConsumerNameOf(p)
	return jetstream.ConsumerConfig{
		Name:          name,
		Durable:       name,
		Description:   "carddrift workers: task lifecycle events",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: t.MaxAckPending,
		BackOff:       append([]time.Duration(nil), t.BackOff...),
		FilterSubject: t.LifecycleFilter(p),
	}
}

// DeclaredStreams returns what the topology declares of its three streams,
// lifecycle, events and dead letters in that order, placement (storage,
// replicas, byte limits left zero) left to store.Provision. Each discards
// its oldest messages at its limits: a full stream never refuses a publish
// (a verdict, a dead letter), it forgets history.
func (t *Topology) DeclaredStreams() []jetstream.StreamConfig {
	stream := func(name, description, subjects string, maxAge, dup time.Duration, maxBytes int64) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        name,
			Description: description,
			Subjects:    []string{subjects},
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxAge:      max(maxAge, 0), // negative: none, JetStream's 0
			MaxBytes:    maxBytes,
			Duplicates:  dup,
		}
	}
	lc := stream(t.LifecycleStream, "carddrift: A2A task lifecycle CloudEvents from clients",
		t.LifecycleSubjects, t.LifecycleMaxAge, t.LifecycleDuplicates, t.LifecycleMaxBytes)
	lc.MaxMsgSize = t.LifecycleMaxMsgSize
	if t.Partitions > 0 {
		p := t.lifecyclePrefix()
		lc.Subjects = []string{p + ".*.*"}
		lc.SubjectTransform = &jetstream.SubjectTransformConfig{
			Source:      p + ".*.*",
			Destination: p + ".{{wildcard(1)}}.{{wildcard(2)}}.{{partition(" + strconv.Itoa(t.Partitions) + ",2)}}",
		}
	}
	return []jetstream.StreamConfig{lc,
		stream(t.EventsStream, "carddrift: card.drift, card.pinned, card.observed, card.unreachable",
			t.EventsSubjects, t.EventsMaxAge, t.EventsDuplicates, t.EventsMaxBytes),
		stream(t.DLQStream, "carddrift: lifecycle events workers gave up on",
			t.DLQSubjects, t.DLQMaxAge, 0, t.DLQMaxBytes),
	}
}
