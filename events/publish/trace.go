package publish

import (
	"context"

	"github.com/carddrift/carddrift/events"
)

type traceKey struct{}

// WithTraceContext returns ctx carrying a W3C trace context: the events a
// client.Emitter publishes with it carry traceparent (and tracestate, when
// not empty) as CloudEvents extensions (events.ExtTraceParent,
// events.ExtTraceState), and carddrift copies them onto every event it
// publishes in consequence (the worker puts an inbound event's trace
// context in the ctx it judges and publishes with). An empty traceparent
// returns ctx.
func WithTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	ext := map[string]string{events.ExtTraceParent: traceparent}
	if tracestate != "" {
		ext[events.ExtTraceState] = tracestate
	}
	return context.WithValue(ctx, traceKey{}, ext)
}

// TraceContext returns the trace context extensions WithTraceContext put in
// ctx (nil when none), ready for events.Event.Extensions. The map must not
// be modified.
func TraceContext(ctx context.Context) map[string]string {
	ext, _ := ctx.Value(traceKey{}).(map[string]string)
	return ext
}
