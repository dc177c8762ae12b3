package a2aemitv2_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/trace"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/publish"
)

// TestInterceptorTraceContext: a call made inside an OpenTelemetry span
// publishes its lifecycle events — errors included — with the span's W3C
// trace context (traceparent, tracestate); a call outside one publishes
// none; a trace context the caller set explicitly wins.
func TestInterceptorTraceContext(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=abc")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	rec := &recording{}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))},
		ok(&a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}))
	call(t, ic, ctx, "GetTask", streamingCard, &a2a.GetTaskRequest{ID: "t1"}, a2aclientErr(a2a.ErrTaskNotFound))
	if len(rec.Traces()) != 5 {
		t.Fatalf("%d events traced, want submitted, request, status, request, error", len(rec.Traces()))
	}
	for i, tr := range rec.Traces() {
		if tr[events.ExtTraceParent] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || tr[events.ExtTraceState] != "vendor=abc" {
			t.Errorf("event %d published with trace context %v", i, tr)
		}
	}

	plain := &recording{}
	ic = a2aemitv2.New(plain, a2aemitv2.Options{})
	call(t, ic, context.Background(), "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))},
		ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}))
	for i, tr := range plain.Traces() {
		if tr != nil {
			t.Errorf("event %d outside a span published with trace context %v", i, tr)
		}
	}

	explicit := &recording{}
	ic = a2aemitv2.New(explicit, a2aemitv2.Options{})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	call(t, ic, publish.WithTraceContext(ctx, tp, ""), "GetTask", streamingCard, &a2a.GetTaskRequest{ID: "t3"},
		ok(&a2a.Task{ID: "t3", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}))
	for i, tr := range explicit.Traces() {
		if tr[events.ExtTraceParent] != tp {
			t.Errorf("event %d published with %v, want the caller's explicit trace context", i, tr)
		}
	}
}
