package client

import (
	"cmp"
	"context"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/publish"
)

// Emitter publishes the lifecycle events of A2A tasks off the call's path:
// each call stamps a fresh id, the source and the time, validates the data
// and queues it (publish.Queue), which publishes in batches and publishes
// again what JetStream did not acknowledge within the timeout. A stream
// must cover events.InboundSubjects.
//
// It holds at most publish.WithBuffer events: a full buffer or an
// unreachable server never blocks or fails a call; the event is dropped,
// counted (Dropped) and logged.
//
// Errors: events.ErrSchemaViolation (with a *schemas.ValidationError) and
// events.ErrInvalidEvent; nil once the event is queued or dropped. Safe for
// concurrent use; the owner calls Close once done.
type Emitter struct {
	js     jetstream.Publisher
	source string
	opts   []publish.Option
	p      *publish.Publisher
	q      *publish.Queue
}

// NewEmitter returns an Emitter publishing with js as source, a
// URI-reference naming the client, and starts its goroutines (Close ends
// them). It does not touch the network.
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

// With returns an Emitter with e's options and then opts that shares e's
// buffer, Dropped, Flush and Close (the buffer's options stay e's).
func (e *Emitter) With(opts ...publish.Option) (*Emitter, error) {
	all := append(slices.Clip(e.opts), opts...)
	p, err := publish.New(e.js, e.source, all...)
	if err != nil {
		return nil, err
	}
	return &Emitter{js: e.js, source: e.source, opts: all, p: p, q: e.q}, nil
}

// Dropped returns how many events were dropped so far (buffer full,
// emitter closed, or never acknowledged).
func (e *Emitter) Dropped() uint64 { return e.q.Dropped() }

// DroppedCounter returns a Prometheus counter that reads Dropped.
func (e *Emitter) DroppedCounter(opts prometheus.CounterOpts) prometheus.CounterFunc {
	return prometheus.NewCounterFunc(opts, func() float64 { return float64(e.Dropped()) })
}

// Pending returns how many events are queued or awaiting their ack.
func (e *Emitter) Pending() int { return e.q.Pending() }

// Flush waits until every event queued before it is acknowledged or
// dropped, or returns ctx's error.
func (e *Emitter) Flush(ctx context.Context) error { return e.q.Flush(ctx) }

// Close stops taking events and waits for what is pending within ctx (or
// the timeout, without a deadline); then it drops the rest and returns
// ctx's error. Safe to call twice.
func (e *Emitter) Close(ctx context.Context) error { return e.q.Close(ctx) }

func (e *Emitter) emit(ctx context.Context, d events.Data) error {
	msg, err := e.p.Message(events.Event{Data: d, Extensions: publish.TraceContext(ctx)})
	if err != nil {
		return err
	}
	e.q.Put(events.Event{Data: d}.TaskID(), msg)
	return nil
}

// Submitted publishes a2a.task.submitted (an empty Posture is sent as
// fail-closed).
func (e *Emitter) Submitted(ctx context.Context, d events.Submitted) error {
	d.Posture = cmp.Or(d.Posture, detector.FailClosed)
	return e.emit(ctx, d)
}

// Request, Status, Artifact and Error publish the events of their types.
func (e *Emitter) Request(ctx context.Context, d events.Request) error { return e.emit(ctx, d) }

func (e *Emitter) Status(ctx context.Context, d events.Status) error { return e.emit(ctx, d) }

func (e *Emitter) Artifact(ctx context.Context, d events.Artifact) error { return e.emit(ctx, d) }

func (e *Emitter) Error(ctx context.Context, d events.Error) error { return e.emit(ctx, d) }
