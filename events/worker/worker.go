package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/internal/retained"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker/budget"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Defaults of Options.
const (
	DefaultHandleTimeout = 30 * time.Second
	DefaultDrainTimeout  = 10 * time.Second
	DefaultBatch         = 500
	DefaultPinnedTTL     = 10 * time.Second
	DefaultCardCache     = 1024
	DefaultConcurrency   = 128
	priorityGroup        = "carddrift"
)

// Defaults of the byte bounds of Options: the shares of budget.Default.
var (
	DefaultCardCacheBytes  = budget.Split(budget.Default).CardsOption()
	DefaultDiffMemoBytes   = budget.Split(budget.Default).DiffMemoOption()
	DefaultPullBufferBytes = int64(budget.Split(budget.Default).Pull) / 2
	DefaultInflightBytes   = int64(budget.Split(budget.Default).Pull) / 2
)

// PullSlack is what a partition's pull buffer holds beyond the server's
// maximum payload at least (subject, reply and headers of one message), so
// that any message the stream accepts can be delivered.
const PullSlack = 64 << 10

// CardEntryOverhead is what the parsed-card cache counts per card beyond
// the card's retained size: its digest key, map slot and FIFO slot.
const CardEntryOverhead = 128

// Options configure a Worker. Zero fields take their defaults.
type Options struct {
	// Name identifies the worker: the CloudEvents source of what it
	// publishes. Required; unique per process.
	Name string
	// Config names the streams, consumers and buckets (store.Config; zero
	// fields take their defaults). The worker creates its consumers; streams
	// and buckets must exist (store.Provision).
	Config store.Config
	// Pins, Cards and Leases are the stores (usually store.Open's, with Pins
	// wrapped in a store.CachedPins). If Pins has a Forget method (a
	// store.CachedPins does), the worker calls it before it handles the
	// first message of each new pinning of a partition (a new Nats-Pin-Id,
	// the first included): while the partition was pinned to another
	// worker, that worker may have written its tasks' pins.
	Pins   store.Pins[task.Pin]
	Cards  store.Cards
	Leases store.Leases
	// Fetch configures the worker's fetcher. Leases, Cards and OnFetch are
	// set by New.
	Fetch fetcher.Options
	// HandleTimeout bounds the handling of one event (default 30s; keep it
	// below the consumer's AckWait times MaxDeliver).
	HandleTimeout time.Duration
	// DrainTimeout bounds the shutdown drain of in-flight events (default 10s).
	DrainTimeout time.Duration
	// Batch is how many events each partition's consumer buffers when
	// PullBufferBytes is negative (default 500). Otherwise the buffers are
	// bounded in bytes and Batch is not used.
	Batch int
	// PullBufferBytes bounds the bytes the worker's consumers buffer (pulled
	// from the server, not yet handed to a handler), summed over its
	// partitions (default DefaultPullBufferBytes, half the pull share of
	// budget.Default): each partition buffers at most an equal part, and at
	// least the server's maximum payload + PullSlack, so that one message
	// larger than its part is still delivered (the stream's maximum
	// message size bounds it). Negative: bounded by Batch messages only.
	PullBufferBytes int64
	// InflightBytes bounds the bytes of the events handed on and not yet
	// finished (queued behind their task's earlier events or being
	// handled), across partitions (default DefaultInflightBytes, the other
	// half of the pull share): a partition waits while they are taken. An
	// event gives its bytes back when it is acknowledged, NAKed or
	// terminated, or once AckWait passes without InProgress. One event
	// larger than the bound is still handled, alone. Negative: no bound.
	InflightBytes int64
	// Concurrency bounds the tasks whose events are handled at once, across
	// the worker's partitions (default 128). Events of one task are handled
	// in stream order; events of different tasks do not wait for each other,
	// so a slow agent delays only its own tasks. Events that need no live
	// card are acknowledged at once, in any case.
	Concurrency int
	// PinnedTTL is how long a partition stays with a worker that stopped
	// pulling before another worker takes it over (default 10s).
	PinnedTTL time.Duration
	// CardCache bounds the parsed pinned cards kept in memory (default 1024).
	CardCache int
	// CardCacheBytes bounds the bytes they retain (default
	// DefaultCardCacheBytes, the cards share of budget.Default): a card
	// counts its retained size (raw body, the parser's copy of it, parsed
	// model: every string, slice and map it reaches) plus CardEntryOverhead;
	// the oldest go first, and a card larger than the whole bound is not
	// cached.
	CardCacheBytes int64
	// DiffMemoBytes bounds the memo of diffs between a pinned and a live
	// card (detector.DiffMemo: a drifted task's pair is diffed once, not
	// at every transition). Default DefaultDiffMemoBytes (a sixteenth of
	// the cards share of budget.Default); negative disables it.
	DiffMemoBytes int64
	// RequireSignedCards is the posture for signed fleets (carddrift serve
	// --require-signed-cards): a live card none of whose signatures
	// verifies with a key trusted for its agent (unsigned, unverifiable,
	// invalid, over the limits, or signed with a key only its own jku
	// vouches for) is breaking drift for every task that observes it
	// (signature-required). Which keys are trusted is Fetch.Signatures.
	RequireSignedCards bool
	// Logger and Metrics (nil: none).
	Logger  zerolog.Logger
	Metrics *Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Worker consumes lifecycle events and publishes verdicts. Create it with New,
// run it with Run; it is safe to call Ready and Close from any goroutine.
type Worker struct {
	js       jetstream.JetStream
	opts     Options
	cfg      store.Config
	fetch    *fetcher.Fetcher
	pub      *publish.Publisher
	log      zerolog.Logger
	m        *Metrics
	cards    *cardCache
	diffs    *detector.DiffMemo // nil: Options.DiffMemoBytes < 0
	dispatch *dispatcher
	acks     *acker
	inflight *inflight // nil: no byte bound (Options.InflightBytes)
	space    *space    // writes refused for lack of space (nospace.go)
	forget   func()    // Options.Pins's Forget, or nil
	// lifecycle is the lifecycle stream's handle, once awaitsSubmission
	// needed it.
	lifecycle atomic.Pointer[jetstream.Stream]

	deliver handlerFunc // the handler inside its delivery policy (chain)

	ready     chan struct{}
	readyOnce sync.Once
}

// New builds a Worker over js. It validates opts and creates the fetcher; it
// does not touch the network.
func New(js jetstream.JetStream, opts Options) (*Worker, error) {
	if js == nil {
		return nil, errors.New("worker: nil JetStream")
	}
	if opts.Name == "" {
		return nil, errors.New("worker: Options.Name is required")
	}
	if opts.Pins == nil || opts.Cards == nil || opts.Leases == nil {
		return nil, errors.New("worker: Options.Pins, Cards and Leases are required")
	}
	cfg := opts.Config
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts.HandleTimeout = defaults.Positive(opts.HandleTimeout, DefaultHandleTimeout)
	opts.DrainTimeout = defaults.Positive(opts.DrainTimeout, DefaultDrainTimeout)
	opts.Batch = defaults.Positive(opts.Batch, DefaultBatch)
	opts.PinnedTTL = defaults.Positive(opts.PinnedTTL, DefaultPinnedTTL)
	opts.CardCache = defaults.Positive(opts.CardCache, DefaultCardCache)
	opts.CardCacheBytes = defaults.Positive(opts.CardCacheBytes, DefaultCardCacheBytes)
	if opts.DiffMemoBytes == 0 {
		opts.DiffMemoBytes = DefaultDiffMemoBytes
	}
	if opts.PullBufferBytes == 0 {
		opts.PullBufferBytes = DefaultPullBufferBytes
	}
	if opts.InflightBytes == 0 {
		opts.InflightBytes = DefaultInflightBytes
	}
	opts.Concurrency = defaults.Positive(opts.Concurrency, DefaultConcurrency)
	opts.Now = defaults.Clock(opts.Now)
	pub, err := publish.New(js, "carddrift/"+opts.Name, publish.WithClock(opts.Now))
	if err != nil {
		return nil, err
	}
	w := &Worker{
		js: js, opts: opts, cfg: cfg, pub: pub, log: opts.Logger, m: opts.Metrics,
		cards:    newCardCache(opts.CardCache, opts.CardCacheBytes),
		diffs:    detector.NewDiffMemo(opts.DiffMemoBytes),
		dispatch: newDispatcher(opts.Concurrency),
		acks:     &acker{log: opts.Logger, m: opts.Metrics, timeout: publish.DefaultTimeout},
		ready:    make(chan struct{}),
		space:    newSpace(opts.Logger, opts.Metrics),
	}
	if opts.InflightBytes > 0 {
		w.inflight = newInflight(opts.InflightBytes, cfg.AckWait)
	}
	if f, ok := opts.Pins.(interface{ Forget() }); ok {
		w.forget = f.Forget
	}
	w.deliver = w.chain(w.handler)
	fo := opts.Fetch
	fo.Leases, fo.Cards = opts.Leases, opts.Cards
	fo.OnFetch = w.onFetch
	fo.OnStoreError = func(err error) {
		// A lease not recorded costs another fetch; a body not stored fails
		// the observation (the event is retried). Neither is lost: say so.
		w.log.Warn().Err(err).Msg("card store write after a fetch failed")
	}
	if fo.Now == nil {
		fo.Now = opts.Now
	}
	if w.fetch, err = fetcher.New(fo); err != nil {
		return nil, err
	}
	return w, nil
}

// Ready is closed once every partition's consumer is consuming.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// Close releases the fetcher. Safe to call twice; call it after Run returns.
func (w *Worker) Close() error { return w.fetch.Close() }

// Run creates the worker's consumers and handles events until ctx is done,
// then drains in-flight events within DrainTimeout and returns nil. It
// returns an error if a consumer cannot be created or consumed.
func (w *Worker) Run(ctx context.Context) error {
	// Handlers run under their own context so that shutdown lets in-flight
	// events finish (within DrainTimeout) instead of failing them.
	hctx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	defer w.dispatch.stop() // idle runners end now, busy ones when their work does
	// The acker's goroutine (ack.go) acknowledges what the handlers handed
	// it; it ends once the drain is over (or at once on a timed-out drain:
	// what it still held is redelivered).
	drainAcks, quitAcks, acksDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.acks.in = make(chan pendingAck, ackBuffer)
	go func() {
		defer close(acksDone)
		w.acks.run(drainAcks, quitAcks)
	}()
	var quitOnce sync.Once
	quit := func() { quitOnce.Do(func() { close(quitAcks) }) }
	defer func() { quit(); <-acksDone }()

	var ccs []jetstream.ConsumeContext
	stopAll := func() {
		for _, cc := range ccs {
			cc.Stop()
		}
	}
	consumers := w.cfg.LifecycleConsumers()
	buffer := w.pullBuffer(len(consumers))
	for _, cc := range consumers {
		cc.PriorityGroups = []string{priorityGroup}
		cc.PriorityPolicy = jetstream.PriorityPolicyPinned
		cc.PinnedTTL = w.opts.PinnedTTL
		cons, err := w.createConsumer(ctx, cc)
		if err != nil {
			stopAll()
			return fmt.Errorf("worker: consumer %s: %w", cc.Durable, err)
		}
		var pinning string // the partition's last Nats-Pin-Id
		consCtx, err := cons.Consume(func(msg jetstream.Msg) {
			w.notePinning(&pinning, msg)
			if w.inflight != nil {
				var ok bool
				if msg, ok = w.inflight.take(hctx, msg); !ok {
					return // shutting down: redelivered
				}
			}
			w.handleMsg(hctx, msg)
		},
			buffer,
			jetstream.PullPriorityGroup(priorityGroup),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				if !errors.Is(err, jetstream.ErrNoHeartbeat) {
					w.log.Debug().Err(err).Str("consumer", cc.Durable).Msg("consume")
				}
			}))
		if err != nil {
			stopAll()
			return fmt.Errorf("worker: consume %s: %w", cc.Durable, err)
		}
		ccs = append(ccs, consCtx)
	}
	w.readyOnce.Do(func() { close(w.ready) })
	w.log.Info().Int("partitions", len(ccs)).Str("stream", w.cfg.LifecycleStream).Msg("worker consuming")

	<-ctx.Done()
	for _, cc := range ccs {
		cc.Drain()
	}
	deadline := time.NewTimer(w.opts.DrainTimeout)
	defer deadline.Stop()
	timedOut := func() error {
		w.log.Warn().Dur("timeout", w.opts.DrainTimeout).Msg("drain timed out; unacknowledged events will be redelivered")
		w.dispatch.abandon()
		cancelHandlers()
		stopAll()
		quit()
		return nil
	}
	for _, cc := range ccs {
		select {
		case <-cc.Closed():
		case <-deadline.C:
			return timedOut()
		}
	}
	// The consumers have handed over every buffered message; wait for the
	// handlers still running (cancelled handlers end within HandleTimeout).
	if !w.dispatch.wait(deadline.C) {
		return timedOut()
	}
	close(drainAcks)
	select {
	case <-acksDone:
	case <-deadline.C:
		return timedOut()
	}
	w.log.Info().Msg("worker drained")
	return nil
}

// notePinning calls the pin cache's Forget (Options.Pins) when msg names
// a pinning of its partition other than *last, and records it there. The
// consumer's callback calls it for every message, before handling it.
func (w *Worker) notePinning(last *string, msg jetstream.Msg) {
	if id := msg.Headers().Get("Nats-Pin-Id"); id != "" && id != *last {
		*last = id
		if w.forget != nil {
			w.forget()
		}
	}
}

// pullBuffer is the consume option that bounds each of n partitions'
// buffer: PullBufferBytes / n bytes, at least the server's maximum payload
// + PullSlack; Batch messages when PullBufferBytes is negative.
func (w *Worker) pullBuffer(n int) jetstream.PullConsumeOpt {
	if w.opts.PullBufferBytes < 0 {
		return jetstream.PullMaxMessages(w.opts.Batch)
	}
	return jetstream.PullMaxBytes(PartitionBuffer(w.opts.PullBufferBytes, n, w.js.Conn().MaxPayload()))
}

// PartitionBuffer is the byte bound of each of n partitions' pull buffers
// under a total of total bytes, for a server whose maximum payload is
// maxPayload: an equal part, at least maxPayload + PullSlack.
func PartitionBuffer(total int64, n int, maxPayload int64) int {
	part := total / int64(max(n, 1))
	return int(min(max(part, maxPayload+PullSlack), 1<<31-1))
}

// onFetch counts every completed fetch and publishes the card.observed the
// lease decided on (contract v1.3: on change or heartbeat).
func (w *Worker) onFetch(obs fetcher.Observation, err error) {
	if err != nil {
		var fe *fetcher.FetchError
		reason := "error"
		if errors.As(err, &fe) {
			reason = string(fe.Reason)
		}
		w.m.fetch(reason, obs.Latency.Seconds())
		return
	}
	// The label is 304 or 200, never the agent's own 2xx: an agent's status
	// codes do not mint series.
	result := "200"
	if obs.Status == http.StatusNotModified {
		result = "304"
	}
	w.m.fetch(result, obs.Latency.Seconds())
	if obs.Fetches == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d := events.Observed{
		AgentURL: agentOf(obs.CardURL), CardURL: obs.CardURL, Digest: obs.Digest, Status: obs.Status,
		ETag: obs.ETag, FetchedAt: obs.FetchedAt.UTC(), LatencyMs: obs.Latency.Milliseconds(),
	}
	if obs.Fetches > 1 {
		// Absent, they mean this fetch alone: a card.observed that reports
		// a change stays one a v1.2 consumer (a closed schema) reads.
		d.Fetches, d.Since = obs.Fetches, obs.Since.UTC()
	}
	w.publish(ctx, d, "")
}

// withTrace returns ctx carrying ev's W3C trace context (the CloudEvents
// distributed-tracing extension: traceparent and tracestate), so that every
// event its handling publishes continues the client's trace.
func withTrace(ctx context.Context, ev events.Event) context.Context {
	return publish.WithTraceContext(ctx, ev.Extensions[events.ExtTraceParent], ev.Extensions[events.ExtTraceState])
}

// publish publishes one outbound event, with the trace context of the
// lifecycle event that caused it (withTrace), and counts it.
func (w *Worker) publish(ctx context.Context, d events.Data, subject string) error {
	dup, err := w.pub.Publish(ctx, events.Event{Data: d, Subject: subject, Extensions: publish.TraceContext(ctx)})
	if err != nil {
		return w.publishFailed(d, err)
	}
	w.m.published(d.EventType(), pubResult(dup))
	return nil
}

// publishLater publishes d asynchronously and adds its future to l, for the
// event's acknowledgement to wait for. An error (the publish could not be
// sent) is transient, as publish's.
func (w *Worker) publishLater(ctx context.Context, d events.Data, subject string, l *later) error {
	msg, err := w.pub.Message(events.Event{Data: d, Subject: subject, Extensions: publish.TraceContext(ctx)})
	var ack jetstream.PubAckFuture
	if err == nil {
		ack, err = w.js.PublishMsgAsync(msg)
	}
	if err != nil {
		return w.publishFailed(d, err)
	}
	l.acks = append(l.acks, published{typ: d.EventType(), ack: ack})
	return nil
}

// publishFailed counts and logs a publish of d that failed: a transient
// error.
func (w *Worker) publishFailed(d events.Data, err error) error {
	w.m.published(d.EventType(), "error")
	w.log.Warn().Err(err).Str("type", d.EventType()).Msg("publish failed")
	return transient(fmt.Errorf("publish %s: %w", d.EventType(), err))
}

// pubResult is the result label of a stored publish.
func pubResult(duplicate bool) string {
	if duplicate {
		return "duplicate"
	}
	return "published"
}

// cardCache keeps parsed pinned cards by digest, bounded by count and by
// the bytes they retain (FIFO: the oldest card goes first).
type cardCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64
	m        map[string]cachedCard
	order    []string
}

type cachedCard struct {
	card *detector.Card
	size int64
}

func newCardCache(max int, maxBytes int64) *cardCache {
	return &cardCache{max: max, maxBytes: maxBytes, m: make(map[string]cachedCard, min(max, 1024))}
}

// cardSize is what a parsed card counts in the cache: its retained size,
// once more its body (the parser reads a copy of the body, which the
// card's strings are slices of: any of them keeps all of it alive), and
// CardEntryOverhead. The strings are then counted twice, an over-estimate.
func cardSize(digest string, card *detector.Card) int64 {
	return retained.Size(card) + int64(len(card.Raw)) + int64(len(digest)) + CardEntryOverhead
}

func (c *cardCache) get(digest string) (*detector.Card, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[digest]
	return e.card, ok
}

func (c *cardCache) put(digest string, card *detector.Card) {
	if _, ok := c.get(digest); ok {
		return
	}
	size := cardSize(digest, card) // outside the lock: linear in the card
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[digest]; ok {
		return
	}
	for len(c.order) > 0 && (len(c.order) >= c.max || c.bytes+size > c.maxBytes) {
		c.bytes -= c.m[c.order[0]].size
		delete(c.m, c.order[0])
		c.order[0] = ""
		c.order = c.order[1:]
	}
	c.m[digest] = cachedCard{card: card, size: size}
	c.bytes += size
	c.order = append(c.order, digest)
}

// Inflight returns the bytes of the events the worker has handed on and not
// finished (see Options.InflightBytes); 0 without the bound.
func (w *Worker) Inflight() int64 {
	if w.inflight == nil {
		return 0
	}
	return w.inflight.held()
}

// CardCacheStats returns how many parsed pinned cards the worker caches and
// the bytes it counts for them (see Options.CardCacheBytes).
func (w *Worker) CardCacheStats() (cards int, bytes int64) { return w.cards.stats() }

// stats returns how many cards the cache holds and their bytes.
func (c *cardCache) stats() (n int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}
