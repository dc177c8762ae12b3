package events

import (
	"context"
	"github.com/carddrift/carddrift/detector"

	"github.com/nats-io/nats.go/jetstream"
)

// Emitter publishes the lifecycle events of A2A tasks, one call per event,
// for an A2A client (for example from an a2a-go CallInterceptor). Each call
// stamps a fresh event id (a UUID), the emitter's source and the current
// time, validates the data against its schema, publishes it on
// a2a.task.<kind>.<taskId> with Nats-Msg-Id source + "/" + id, and waits for
// the JetStream ack within the emitter's timeout (DefaultTimeout unless
// WithTimeout). A JetStream stream must cover InboundSubjects.
//
// Errors: ErrSchemaViolation (with a *schemas.ValidationError naming the
// field) for invalid data, ErrInvalidEvent, and JetStream publish errors.
// Safe for concurrent use; nothing to close.
type Emitter struct {
	p *Publisher
}

// NewEmitter returns an Emitter publishing with js (usually a
// jetstream.JetStream) as source, a URI-reference naming the client (for
// example "urn:client:planner-7"). It does not touch the network.
func NewEmitter(js jetstream.Publisher, source string, opts ...Option) (*Emitter, error) {
	p, err := NewPublisher(js, source, opts...)
	if err != nil {
		return nil, err
	}
	return &Emitter{p: p}, nil
}

func (e *Emitter) emit(ctx context.Context, d Data) error {
	_, err := e.p.Publish(ctx, Event{Data: d, Extensions: TraceContext(ctx)})
	return err
}

type traceKey struct{}

// WithTraceContext returns ctx carrying a W3C trace context: the events an
// Emitter publishes with it carry traceparent (and tracestate, when not
// empty) as CloudEvents extensions, and carddrift copies them onto every
// event it publishes in consequence. An empty traceparent returns ctx.
func WithTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	ext := map[string]string{ExtTraceParent: traceparent}
	if tracestate != "" {
		ext[ExtTraceState] = tracestate
	}
	return context.WithValue(ctx, traceKey{}, ext)
}

// TraceContext returns the trace context extensions WithTraceContext put in
// ctx (nil when none). The map must not be modified.
func TraceContext(ctx context.Context) map[string]string {
	ext, _ := ctx.Value(traceKey{}).(map[string]string)
	return ext
}

// Submitted publishes a2a.task.submitted: the task was planned against a
// card (pass Card or CardDigest when the client has them). An empty Posture
// is sent as fail-closed, the safe default.
func (e *Emitter) Submitted(ctx context.Context, d Submitted) error {
	if d.Posture == "" {
		d.Posture = detector.FailClosed
	}
	return e.emit(ctx, d)
}

// Request publishes a2a.task.request before each request of the task,
// retries included (Attempt 2, 3, ...).
func (e *Emitter) Request(ctx context.Context, d Request) error { return e.emit(ctx, d) }

// Status publishes a2a.task.status for each status update the client sees.
func (e *Emitter) Status(ctx context.Context, d Status) error { return e.emit(ctx, d) }

// Artifact publishes a2a.task.artifact for each artifact the client receives.
func (e *Emitter) Artifact(ctx context.Context, d Artifact) error { return e.emit(ctx, d) }

// Error publishes a2a.task.error for each failed request.
func (e *Emitter) Error(ctx context.Context, d Error) error { return e.emit(ctx, d) }
