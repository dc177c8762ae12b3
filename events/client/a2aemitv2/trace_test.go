package a2aemitv2_test

import (
	"context"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/trace"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/publish"
)

// tracing records the trace context each event is published with.
type tracing struct {
	recording
	mu     sync.Mutex
	traces []map[string]string
}

func (r *tracing) keep(ctx context.Context) {
	r.mu.Lock()
	r.traces = append(r.traces, publish.TraceContext(ctx))
	r.mu.Unlock()
}

func (r *tracing) Submitted(ctx context.Context, d events.Submitted) error {
	r.keep(ctx)
	return r.recording.Submitted(ctx, d)
}

func (r *tracing) Request(ctx context.Context, d events.Request) error {
	r.keep(ctx)
	return r.recording.Request(ctx, d)
}

func (r *tracing) Status(ctx context.Context, d events.Status) error {
	r.keep(ctx)
	return r.recording.Status(ctx, d)
}

func (r *tracing) Error(ctx context.Context, d events.Error) error {
	r.keep(ctx)
	return r.recording.Error(ctx, d)
}

// TestInterceptorTraceContext: a call made inside an OpenTelemetry span
// publishes its lifecycle events — errors included — with the span's W3C
// trace context (traceparent, tracestate); a call outside one publishes
// none; a trace context the caller set explicitly wins.
func TestInterceptorTraceContext(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=abc")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	rec := &tracing{}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	call(t, ic, ctx, "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))},
		ok(&a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}))
	call(t, ic, ctx, "GetTask", streamingCard, &a2a.GetTaskRequest{ID: "t1"}, a2aclientErr(a2a.ErrTaskNotFound))
	if len(rec.traces) != 5 {
		t.Fatalf("%d events traced, want submitted, request, status, request, error", len(rec.traces))
	}
	for i, tr := range rec.traces {
		if tr[events.ExtTraceParent] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || tr[events.ExtTraceState] != "vendor=abc" {
			t.Errorf("event %d published with trace context %v", i, tr)
		}
	}

	plain := &tracing{}
	ic = a2aemitv2.New(plain, a2aemitv2.Options{})
	call(t, ic, context.Background(), "SendStreamingMessage", streamingCard, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))},
		ok(&a2a.Task{ID: "t2", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}))
	for i, tr := range plain.traces {
		if tr != nil {
			t.Errorf("event %d outside a span published with trace context %v", i, tr)
		}
	}

	explicit := &tracing{}
	ic = a2aemitv2.New(explicit, a2aemitv2.Options{})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	call(t, ic, publish.WithTraceContext(ctx, tp, ""), "GetTask", streamingCard, &a2a.GetTaskRequest{ID: "t3"},
		ok(&a2a.Task{ID: "t3", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}))
	for i, tr := range explicit.traces {
		if tr[events.ExtTraceParent] != tp {
			t.Errorf("event %d published with %v, want the caller's explicit trace context", i, tr)
		}
	}
}
