package a2aemit_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"go.opentelemetry.io/otel/trace"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/a2aemit"
)

// TestInterceptorTraceContext: a call made inside an OpenTelemetry span
// publishes its lifecycle events with the span's W3C trace context
// (traceparent, tracestate); a call outside one publishes none.
func TestInterceptorTraceContext(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=abc")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	rec := &recording{}
	ic := a2aemit.New(rec, a2aemit.Options{})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hi"})},
		ok(&a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}))
	if len(rec.Traces()) == 0 {
		t.Fatal("no event published")
	}
	for i, tr := range rec.Traces() {
		if tr[events.ExtTraceParent] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || tr[events.ExtTraceState] != "vendor=abc" {
			t.Errorf("event %d published with trace context %v", i, tr)
		}
	}

	plain := &recording{}
	ic = a2aemit.New(plain, a2aemit.Options{})
	call(t, ic, context.Background(), "SendStreamingMessage", streamingCard, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hi"})},
		ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}))
	for i, tr := range plain.Traces() {
		if tr != nil {
			t.Errorf("event %d outside a span published with trace context %v", i, tr)
		}
	}
}
