package client

import (
	"context"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/publish"
)

// Emitter publishes the lifecycle events of A2A tasks, one call per event,
// for an A2A client (for example from an a2a-go CallInterceptor, package
// a2aemit), off the call's path. Each call stamps a fresh event id (a
// UUID), the emitter's source and the current time, validates the data
// against its schema, and queues it (a publish.Queue) for publishing on
// a2a.task.<kind>.<taskId> with Nats-Msg-Id source + "/" + id; a sender
// publishes what is queued in batches, asynchronously, and waits for the
// JetStream acks, publishing again (stored once) what was not acknowledged
// within the emitter's timeout (publish.DefaultTimeout unless
// publish.WithTimeout). A JetStream stream must cover
// events.InboundSubjects. A ctx from publish.WithTraceContext puts its
// trace context on the event.
//
// The emitter holds at most publish.WithBuffer events, queued or awaiting
// their ack: a full buffer or an unreachable server never blocks or fails a
// call; the event is dropped, counted (Dropped) and logged
// (publish.WithLogger, at most once per publish.DropWarnEvery). Close
// flushes what is pending.
//
// Errors: events.ErrSchemaViolation (with a *schemas.ValidationError naming
// the field) for invalid data and events.ErrInvalidEvent; nil once the
// event is queued or dropped. Safe for concurrent use; the owner calls
// Close once done.
type Emitter struct {
	js     jetstream.Publisher
	source string
	opts   []publish.Option
	p      *publish.Publisher
	q      *publish.Queue
}

// NewEmitter returns an Emitter publishing with js (usually a
// jetstream.JetStream) as source, a URI-reference naming the client (for
// example "urn:client:planner-7"), with the publisher's options, and starts
// its goroutines (Close ends them). It does not touch the network.
func NewEmitter(js jetstream.Publisher, source string, opts ...publish.Option) (*Emitter, error) {
	p, err := publish.New(js, source, opts...)
	if err != nil {
		return nil, err
	}
	q, err := publish.NewQueue(js, opts...)
	if err != nil {
		return nil, err
	}
	return &Emitter{js: js, source: source, opts: opts, p: p, q: q}, nil
}

// With returns an Emitter with e's options and then opts (for example its
// own publish.WithIDs) that publishes through e's buffer: the two share the
// buffer, Dropped, Flush and Close, and the options that shape the buffer
// (WithBuffer, WithLogger, WithTimeout) stay e's.
func (e *Emitter) With(opts ...publish.Option) (*Emitter, error) {
	all := append(slices.Clip(e.opts), opts...)
	p, err := publish.New(e.js, e.source, all...)
	if err != nil {
		return nil, err
	}
	return &Emitter{js: e.js, source: e.source, opts: all, p: p, q: e.q}, nil
}

// Dropped returns how many events were dropped so far (the buffer was full,
// the emitter closed, or JetStream did not acknowledge them after every
// attempt). It only grows; DroppedCounter exports it as a metric.
func (e *Emitter) Dropped() uint64 { return e.q.Dropped() }

// DroppedCounter returns a Prometheus counter that reads Dropped, for the
// client's registry.
func (e *Emitter) DroppedCounter(opts prometheus.CounterOpts) prometheus.CounterFunc {
	return prometheus.NewCounterFunc(opts, func() float64 { return float64(e.Dropped()) })
}

// Pending returns how many events the emitter holds, queued or awaiting
// their ack (at most publish.WithBuffer).
func (e *Emitter) Pending() int { return e.q.Pending() }

// Flush waits until every event queued before it is acknowledged or
// dropped, or returns ctx's error.
func (e *Emitter) Flush(ctx context.Context) error { return e.q.Flush(ctx) }

// Close stops taking events (later calls drop them) and waits until what is
// pending is acknowledged, within ctx or, when ctx has no deadline, the
// emitter's timeout; then it drops the rest and returns ctx's error. Safe to
// call twice.
func (e *Emitter) Close(ctx context.Context) error { return e.q.Close(ctx) }

func (e *Emitter) emit(ctx context.Context, d events.Data) error {
	msg, err := e.p.Message(events.Event{Data: d, Extensions: publish.TraceContext(ctx)})
	if err != nil {
		return err
	}
	e.q.Put(msg)
	return nil
}

// Submitted publishes a2a.task.submitted: the task was planned against a
// card (pass Card or CardDigest when the client has them). An empty Posture
// is sent as fail-closed, the safe default.
func (e *Emitter) Submitted(ctx context.Context, d events.Submitted) error {
	if d.Posture == "" {
		d.Posture = detector.FailClosed
	}
	return e.emit(ctx, d)
}

// Request publishes a2a.task.request before each request of the task,
// retries included (Attempt 2, 3, ...).
func (e *Emitter) Request(ctx context.Context, d events.Request) error { return e.emit(ctx, d) }

// Status publishes a2a.task.status for each status update the client sees.
func (e *Emitter) Status(ctx context.Context, d events.Status) error { return e.emit(ctx, d) }

// Artifact publishes a2a.task.artifact for each artifact the client receives.
func (e *Emitter) Artifact(ctx context.Context, d events.Artifact) error { return e.emit(ctx, d) }

// Error publishes a2a.task.error for each failed request.
func (e *Emitter) Error(ctx context.Context, d events.Error) error { return e.emit(ctx, d) }
