package planner

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/topology"
)

// Defaults of Options.
const (
	DefaultAckWait      = 30 * time.Second
	DefaultMaxDeliver   = 10
	DefaultNakDelay     = time.Second
	DefaultMaxNakDelay  = time.Minute
	DefaultBuffer       = 16
	DefaultStoreTimeout = 5 * time.Second
)

// Options configure Subscribe. Zero fields take their defaults.
type Options struct {
	// Durable names the planner's durable consumer (required; [A-Za-z0-9_-]).
	// Instances that share a name share the work.
	Durable string
	// Agent, if set, limits the subscription to this agent's verdicts.
	Agent string
	// Actions, if set, delivers only verdicts with one of these actions.
	Actions []detector.Action
	// MinSeverity, if set, delivers only verdicts whose Impact reaches it.
	MinSeverity detector.Severity
	// Stream is the events stream (default topology.DefaultEventsStream).
	Stream string
	// FromStart makes a new durable start at the beginning of the stream.
	FromStart bool
	// AckWait is the redelivery wait of an unacknowledged verdict (default
	// 30s); a running handler keeps it in progress.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one verdict (default 10; <0: none).
	MaxDeliver int
	// NakDelay is the redelivery delay after the first handler error; it
	// doubles with each further delivery up to MaxNakDelay (defaults 1s, 1m).
	NakDelay, MaxNakDelay time.Duration
	// Buffer is how many verdicts the client pulls ahead (default 16).
	Buffer int
	// Pins and Cards, both set, make Verdict.Impacting exact for card.drift
	// events that do not say which findings touch the task (see Verdict).
	Pins  store.Pins[task.Pin]
	Cards store.Cards
	// StoreTimeout bounds the store reads of one verdict (default 5s).
	StoreTimeout time.Duration
	// OnError, if set, is told about verdicts not handed to the handler
	// (undecodable, store failures), on the consuming goroutine.
	OnError func(err error)
}

var durableRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (o *Options) setDefaults() {
	if o.Stream == "" {
		o.Stream = topology.DefaultEventsStream
	}
	o.AckWait = defaults.Positive(o.AckWait, DefaultAckWait)
	if o.MaxDeliver == 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	o.NakDelay = defaults.Positive(o.NakDelay, DefaultNakDelay)
	o.MaxNakDelay = defaults.Positive(o.MaxNakDelay, DefaultMaxNakDelay)
	o.Buffer = defaults.Positive(o.Buffer, DefaultBuffer)
	o.StoreTimeout = defaults.Positive(o.StoreTimeout, DefaultStoreTimeout)
}

// validate checks the options and returns the subject filter.
func (o *Options) validate() (string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...)
	}
	if !durableRe.MatchString(o.Durable) {
		return "", bad("Durable %q: want a name of letters, digits, '-' and '_'", o.Durable)
	}
	if !durableRe.MatchString(o.Stream) {
		return "", bad("Stream %q is not a stream name", o.Stream)
	}
	for _, a := range o.Actions {
		switch a {
		case detector.Abort, detector.Replan, detector.Continue:
		default:
			return "", bad("action %q: want abort, replan or continue", a)
		}
	}
	if o.MinSeverity != 0 && o.MinSeverity.String() == "invalid" {
		return "", bad("MinSeverity %d is not a severity", o.MinSeverity)
	}
	filter := "card.drift.*.*"
	if o.Agent != "" {
		key, err := events.AgentKey(o.Agent)
		if err != nil {
			return "", bad("Agent: %w", err)
		}
		filter = "card.drift." + key + ".*"
	}
	return filter, nil
}

func (o *Options) consumerConfig(filter string) jetstream.ConsumerConfig {
	policy := jetstream.DeliverNewPolicy
	if o.FromStart {
		policy = jetstream.DeliverAllPolicy
	}
	return jetstream.ConsumerConfig{
		Durable:       o.Durable,
		Description:   "carddrift planner: card.drift verdicts",
		FilterSubject: filter,
		DeliverPolicy: policy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxDeliver:    o.MaxDeliver,
		MaxAckPending: max(o.Buffer*4, 64),
	}
}

// wantsAction reports whether the verdict passes the action filter.
func (o *Options) wantsAction(a detector.Action) bool {
	return len(o.Actions) == 0 || slices.Contains(o.Actions, a)
}

// nakDelay is the redelivery delay after the delivered-th delivery failed.
func (o *Options) nakDelay(delivered uint64) time.Duration {
	d := o.NakDelay
	for i := uint64(1); i < delivered && d < o.MaxNakDelay; i++ {
		d *= 2
	}
	return min(d, o.MaxNakDelay)
}
