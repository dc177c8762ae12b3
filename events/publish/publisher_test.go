package publish_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestPublisherDedup publishes the same drift from two workers and checks
// that the stream stores it once and the second publish reports dup.
func TestPublisherDedup(t *testing.T) {
	js := startJS(t)
	ctx := context.Background()
	w1, err := publish.New(js, "carddrift/worker-1")
	if err != nil {
		t.Fatal(err)
	}
	w2, err := publish.New(js, "carddrift/worker-2", publish.WithMode(events.Structured))
	if err != nil {
		t.Fatal(err)
	}
	d := drift("streaming-disabled")
	dup, err := w1.Publish(ctx, events.Event{Data: d})
	if err != nil || dup {
		t.Fatalf("first Publish = %v, %v", dup, err)
	}
	dup, err = w2.Publish(ctx, events.Event{Data: drift("streaming-disabled")})
	if err != nil || !dup {
		t.Fatalf("second Publish = %v, %v; want dup", dup, err)
	}
	dup, err = w2.Publish(ctx, events.Event{Data: drift("streaming-disabled", "blind-retry")})
	if err != nil || dup {
		t.Fatalf("Publish with a new finding = %v, %v; want stored", dup, err)
	}
	msgs := natstest.ReadStream(t, js, "CARD", 2)
	ev, err := events.Decode(msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != events.MsgID(d) || ev.Source != "carddrift/worker-1" || ev.Subject != d.TaskID || ev.Time.IsZero() {
		t.Errorf("stored event = %+v", ev)
	}
	if got := msgs[0].Headers().Get(jetstream.MsgIDHeader); got != events.MsgID(d) {
		t.Errorf("Nats-Msg-Id = %q, want %q", got, events.MsgID(d))
	}
}

// TestPublisherInbound publishes lifecycle data: a fresh id from the id
// generator, the clock's time, Nats-Msg-Id source/id, and the trace
// context of the ctx when the caller passes it on.
func TestPublisherInbound(t *testing.T) {
	js := startJS(t)
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	p, err := publish.New(js, "urn:client:7",
		publish.WithIDs(func() string { return "evt-1" }), publish.WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := publish.WithTraceContext(t.Context(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	req := events.Request{TaskID: "task-1", AgentURL: "https://agent.example", Method: "message/stream", Attempt: 1}
	if _, err := p.Publish(ctx, events.Event{Data: req, Extensions: publish.TraceContext(ctx)}); err != nil {
		t.Fatal(err)
	}
	m := natstest.ReadStream(t, js, "A2A", 1)[0]
	ev, err := events.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "evt-1" || !ev.Time.Equal(at) || m.Headers().Get(jetstream.MsgIDHeader) != "urn:client:7/evt-1" {
		t.Errorf("stored event id %q time %v msg id %q, want evt-1, %v, urn:client:7/evt-1", ev.ID, ev.Time, m.Headers().Get(jetstream.MsgIDHeader), at)
	}
	if got := ev.Extensions[events.ExtTraceParent]; got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("traceparent = %q, want the ctx's", got)
	}
	if _, ok := ev.Extensions[events.ExtTraceState]; ok {
		t.Errorf("an empty tracestate was published: %v", ev.Extensions)
	}
	if publish.TraceContext(t.Context()) != nil || publish.WithTraceContext(t.Context(), "", "x") != t.Context() {
		t.Errorf("a ctx without a traceparent carries a trace context")
	}
}

func TestPublisherErrors(t *testing.T) {
	if _, err := publish.New(nil, "x"); err == nil {
		t.Error("New(nil) succeeded")
	}
	js := startJS(t)
	for _, bad := range []string{"", "a b", "ü"} {
		if _, err := publish.New(js, bad); !errors.Is(err, events.ErrInvalidEvent) {
			t.Errorf("New(source %q) = %v, want ErrInvalidEvent", bad, err)
		}
	}
	for _, opt := range []publish.Option{publish.WithTimeout(0), publish.WithMode(9), publish.WithClock(nil), publish.WithIDs(nil)} {
		if _, err := publish.New(js, "w", opt); err == nil {
			t.Error("New with a bad option succeeded")
		}
	}
	p, err := publish.New(js, "w", publish.WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Publish(ctx, events.Event{Data: events.Request{TaskID: "t"}}); !errors.Is(err, events.ErrSchemaViolation) {
		t.Errorf("Publish(invalid) = %v, want ErrSchemaViolation", err)
	}
	// No stream covers the subject: the publish fails within the timeout.
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx2, "A2A"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	req := events.Request{TaskID: "t", AgentURL: "https://agent.example", Method: "message/stream", Attempt: 1}
	if _, err := p.Publish(ctx, events.Event{Data: req}); err == nil {
		t.Error("Publish without a stream succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Publish without a stream took %v", d)
	}
}

// startJS starts a fresh embedded JetStream server with the streams A2A
// (events.InboundSubjects) and CARD (events.OutboundSubjects).
func startJS(t testing.TB) jetstream.JetStream {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	for name, subj := range map[string]string{"A2A": events.InboundSubjects, "CARD": events.OutboundSubjects} {
		if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Storage: jetstream.MemoryStorage}); err != nil {
			t.Fatalf("CreateStream %s: %v", name, err)
		}
	}
	return js
}

// drift is a card.drift with one finding per rule.
func drift(rules ...string) events.Drift {
	d := events.Drift{
		TaskID: "task.1 *>", AgentURL: "https://agent.example", CardURL: "https://agent.example/.well-known/agent-card.json",
		Pinned:  events.CardRef{Digest: "sha256:" + hex64('1'), Fingerprint: "sha256:" + hex64('a')},
		Live:    events.CardRef{Digest: "sha256:" + hex64('2'), Fingerprint: "sha256:" + hex64('b')},
		Verdict: detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "the task streams"},
		Trigger: events.Trigger{EventID: "e-1", Type: events.TypeRequest, Source: "urn:client:7"},
	}
	for _, r := range rules {
		d.Findings = append(d.Findings, detector.Finding{Rule: r, Severity: detector.Breaking, Path: "/x", Message: r})
	}
	return d
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
