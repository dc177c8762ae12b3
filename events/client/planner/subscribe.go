package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
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
	o.Stream = cmp.Or(o.Stream, topology.DefaultEventsStream)
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

// nakDelay is the redelivery delay after the delivered-th delivery failed.
func (o *Options) nakDelay(delivered uint64) time.Duration {
	d := o.NakDelay
	for i := uint64(1); i < delivered && d < o.MaxNakDelay; i++ {
		d *= 2
	}
	return min(d, o.MaxNakDelay)
}

// Handler acts on one verdict: nil acknowledges it, an error NAKs it for
// redelivery after a delay. ctx is canceled by Stop (or the context given
// to Subscribe ending), not by Drain.
type Handler func(ctx context.Context, v Verdict) error

// Subscription is a running subscription to card.drift, like jetstream's
// ConsumeContext: Stop or Drain end it, Closed tells when it has ended.
// Its methods are safe to call from any goroutine, more than once.
type Subscription struct {
	cc      jetstream.ConsumeContext
	opts    Options
	handler Handler

	hctx    context.Context // handlers' context, canceled by Stop
	cancel  context.CancelFunc
	ending  chan struct{} // closed by the first Stop or Drain
	endOnce sync.Once

	mu       sync.Mutex
	stopped  bool // Stop was called: hand nothing more to the handler
	inflight sync.WaitGroup

	closed chan struct{}
}

// Subscribe starts delivering card.drift verdicts to handler through the
// durable pull consumer opts.Durable on the events stream, creating it or
// updating its filter.
//
// Delivery is at least once, one verdict at a time, in stream order: acked
// when handler returns nil or the filters refuse it; NAKed with a growing
// delay when handler fails or panics or the stores fail; terminated when it
// does not decode. Make side effects idempotent (keyed by Verdict.EventID).
//
// ctx bounds the subscription as Stop does. Errors: ErrInvalidOptions
// (wrapped); JetStream errors when the consumer cannot be created.
func Subscribe(ctx context.Context, js jetstream.JetStream, opts Options, handler Handler) (*Subscription, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrInvalidOptions)
	}
	if handler == nil {
		return nil, fmt.Errorf("%w: nil handler", ErrInvalidOptions)
	}
	opts.setDefaults()
	filter, err := opts.validate()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := js.CreateOrUpdateConsumer(cctx, opts.Stream, opts.consumerConfig(filter))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("planner: consumer %s on %s: %w", opts.Durable, opts.Stream, err)
	}
	s := &Subscription{
		opts: opts, handler: handler,
		ending: make(chan struct{}), closed: make(chan struct{}),
	}
	s.hctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.cc, err = cons.Consume(s.deliver, jetstream.PullMaxMessages(opts.Buffer))
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("planner: consume %s: %w", opts.Durable, err)
	}
	go s.watch(ctx) // exits once the subscription has closed
	return s, nil
}

// watch ends the subscription when ctx ends, and closes Closed once the
// consumer has stopped and no handler runs.
func (s *Subscription) watch(ctx context.Context) {
	consumed := s.cc.Closed()
	select {
	case <-ctx.Done():
		s.Stop()
	case <-s.ending:
	case <-consumed:
	}
	<-consumed
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.cancel()
	close(s.closed)
}

// Stop ends the subscription at once: no further verdict reaches the
// handler, and the running handler's context is canceled.
func (s *Subscription) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	s.endOnce.Do(func() { close(s.ending) })
	s.cc.Stop()
}

// Drain ends the subscription once the verdicts already buffered are
// handled.
func (s *Subscription) Drain() {
	s.endOnce.Do(func() { close(s.ending) })
	s.cc.Drain()
}

// Closed is closed once the subscription has ended and no handler runs.
func (s *Subscription) Closed() <-chan struct{} { return s.closed }

// deliver handles one message from the consumer.
func (s *Subscription) deliver(msg jetstream.Msg) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = msg.Nak()
		return
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	ev, err := events.Decode(msg)
	if err == nil && ev.Type != events.TypeDrift {
		err = fmt.Errorf("%w: %s on %s is not card.drift", events.ErrUnknownType, ev.Type, msg.Subject())
	}
	if err != nil {
		s.report(fmt.Errorf("planner: terminating undecodable verdict on %s: %w", msg.Subject(), err))
		_ = msg.TermWithReason("undecodable")
		return
	}
	v := newVerdict(ev, ev.Data.(events.Drift))
	md, err := msg.Metadata()
	if err == nil {
		v.Delivery, v.Sequence = md.NumDelivered, md.Sequence.Stream
	}
	if len(s.opts.Actions) > 0 && !slices.Contains(s.opts.Actions, v.Action) {
		_ = msg.Ack()
		return
	}
	sctx, cancel := context.WithTimeout(s.hctx, s.opts.StoreTimeout)
	err = resolveImpact(sctx, &v, s.opts.Pins, s.opts.Cards)
	cancel()
	if err != nil {
		s.report(err)
		_ = msg.NakWithDelay(s.opts.nakDelay(v.Delivery))
		return
	}
	if s.opts.MinSeverity != 0 && v.Impact < s.opts.MinSeverity {
		_ = msg.Ack()
		return
	}
	if err := s.handle(msg, v); err != nil {
		_ = msg.NakWithDelay(s.opts.nakDelay(v.Delivery))
		return
	}
	_ = msg.Ack()
}

// handle runs the handler, keeping the message in progress meanwhile, and
// turns a panic into an error.
func (s *Subscription) handle(msg jetstream.Msg, v Verdict) (err error) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() { // owned by handle: exits when the handler returns
		defer close(exited)
		t := time.NewTicker(max(s.opts.AckWait/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	defer func() {
		close(done)
		<-exited
		if r := recover(); r != nil {
			err = fmt.Errorf("planner: handler panicked: %v", r)
			s.report(err)
		}
	}()
	return s.handler(s.hctx, v)
}

func (s *Subscription) report(err error) {
	if s.opts.OnError != nil && err != nil && !errors.Is(err, context.Canceled) {
		s.opts.OnError(err)
	}
}
