package client

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/publish"
)

// Emitter publishes the lifecycle events of A2A tasks, one call per event,
// for an A2A client (for example from an a2a-go CallInterceptor, package
// a2aemit). Each call stamps a fresh event id (a UUID), the emitter's
// source and the current time, validates the data against its schema,
// publishes it on a2a.task.<kind>.<taskId> with Nats-Msg-Id source + "/" +
// id, and waits for the JetStream ack within the emitter's timeout
// (publish.DefaultTimeout unless publish.WithTimeout). A JetStream stream
// must cover events.InboundSubjects. A ctx from publish.WithTraceContext
// puts its trace context on the event.
//
// Errors: events.ErrSchemaViolation (with a *schemas.ValidationError naming
// the field) for invalid data, events.ErrInvalidEvent, and JetStream
// publish errors. Safe for concurrent use; nothing to close.
type Emitter struct {
	p *publish.Publisher
}

// NewEmitter returns an Emitter publishing with js (usually a
// jetstream.JetStream) as source, a URI-reference naming the client (for
// example "urn:client:planner-7"), with the publisher's options. It does
// not touch the network.
func NewEmitter(js jetstream.Publisher, source string, opts ...publish.Option) (*Emitter, error) {
	p, err := publish.New(js, source, opts...)
	if err != nil {
		return nil, err
	}
	return &Emitter{p: p}, nil
}

func (e *Emitter) emit(ctx context.Context, d events.Data) error {
	_, err := e.p.Publish(ctx, events.Event{Data: d, Extensions: publish.TraceContext(ctx)})
	return err
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
