package events_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/schemas"
)

// embeddedJetStream starts an embedded JetStream server
// (servicetest.EmbeddedJetStream) with a stream named stream over subjects.
func embeddedJetStream(stream, subjects string) (js jetstream.JetStream, stop func()) {
	js, stop = servicetest.EmbeddedJetStream()
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: stream, Subjects: []string{subjects}}); err != nil {
		panic(err)
	}
	return js, stop
}

// An A2A client reports a task's lifecycle with one Emitter call per event.
// Here the ids and the clock are fixed so that the output is stable; a real
// client leaves both to their defaults (random UUIDs, time.Now).
func ExampleEmitter() {
	js, stop := embeddedJetStream("A2A", events.InboundSubjects)
	defer stop()
	ctx := context.Background()

	n := 0
	em, err := events.NewEmitter(js, "urn:client:planner-7",
		events.WithIDs(func() string { n++; return fmt.Sprintf("evt-%d", n) }),
		events.WithClock(func() time.Time { return time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC) }),
	)
	if err != nil {
		panic(err)
	}
	agent := "https://travel.example/a2a"
	steps := []error{
		em.Submitted(ctx, events.Submitted{
			TaskID: "task-42", AgentURL: agent, SkillID: "book-flight",
			Requires: events.Requires{Streaming: true, OutputModes: []string{"application/json"}},
			Posture:  detector.Degrade, Idempotent: true,
			CardDigest: "sha256:3f5c8e1a9b7d2c4e6f8a0b1c3d5e7f9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e",
		}),
		em.Request(ctx, events.Request{TaskID: "task-42", AgentURL: agent, Method: "message/stream", Attempt: 1}),
		em.Status(ctx, events.Status{TaskID: "task-42", AgentURL: agent, State: "input-required", SkillID: "pick-seat"}),
		em.Error(ctx, events.Error{TaskID: "task-42", AgentURL: agent, Method: "message/stream", Code: -32602, Message: "Invalid params"}),
		em.Request(ctx, events.Request{TaskID: "task-42", AgentURL: agent, Method: "message/stream", Attempt: 2}),
	}
	if err := errors.Join(steps...); err != nil {
		panic(err)
	}

	// What a carddrift worker sees on the stream.
	c, _ := js.OrderedConsumer(ctx, "A2A", jetstream.OrderedConsumerConfig{})
	batch, _ := c.Fetch(len(steps))
	for m := range batch.Messages() {
		ev, err := events.Decode(m)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %s %s\n", m.Subject(), ev.ID, m.Headers().Get(jetstream.MsgIDHeader))
	}
	// Output:
	// a2a.task.submitted.task-42 evt-1 urn:client:planner-7/evt-1
	// a2a.task.request.task-42 evt-2 urn:client:planner-7/evt-2
	// a2a.task.status.task-42 evt-3 urn:client:planner-7/evt-3
	// a2a.task.error.task-42 evt-4 urn:client:planner-7/evt-4
	// a2a.task.request.task-42 evt-5 urn:client:planner-7/evt-5
}

// Invalid data never reaches the stream: the Emitter validates it against
// the event's schema and names the field.
func ExampleEmitter_Request_invalid() {
	js, stop := embeddedJetStream("A2A", events.InboundSubjects)
	defer stop()

	em, _ := events.NewEmitter(js, "urn:client:planner-7")
	err := em.Request(context.Background(), events.Request{TaskID: "task-42", AgentURL: "https://travel.example", Method: "message/send", Attempt: 0})

	var verr *schemas.ValidationError
	fmt.Println(errors.Is(err, events.ErrSchemaViolation), errors.As(err, &verr))
	fmt.Println(verr.Field, "-", verr.Reason)
	// Output:
	// true true
	// /attempt - minimum: got 0, want 1
}

// A carddrift worker publishes outcomes with a Publisher. The same drift
// published twice (a redelivery, a second worker) is stored once.
func ExamplePublisher_Publish() {
	js, stop := embeddedJetStream("CARD", events.OutboundSubjects)
	defer stop()
	ctx := context.Background()

	pub, _ := events.NewPublisher(js, "carddrift/worker-1")
	d := events.Drift{
		TaskID: "task-42", AgentURL: "https://travel.example/a2a", CardURL: "https://travel.example/.well-known/agent-card.json",
		Pinned: events.CardRef{Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111", Fingerprint: "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		Live:   events.CardRef{Digest: "sha256:2222222222222222222222222222222222222222222222222222222222222222", Fingerprint: "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
		Findings: []detector.Finding{{Rule: "streaming-disabled", Severity: detector.Breaking, Path: "/capabilities/streaming",
			Before: true, After: false, Message: "the agent no longer streams"}},
		Verdict: detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "the task streams"},
		Trigger: events.Trigger{EventID: "evt-2", Type: events.TypeRequest, Source: "urn:client:planner-7"},
	}
	for range 2 {
		dup, err := pub.Publish(ctx, events.Event{Data: d})
		fmt.Println("duplicate:", dup, err)
	}
	subject, _ := events.Subject(d)
	fmt.Println(subject)
	// Output:
	// duplicate: false <nil>
	// duplicate: true <nil>
	// card.drift.travel=2Eexample.task-42
}

// Decode reads either content mode and returns typed data.
func ExampleDecode() {
	msg, _ := events.Encode(events.Event{
		ID: "evt-1", Source: "urn:client:planner-7",
		Data: events.Status{TaskID: "task-42", AgentURL: "https://travel.example", State: "TASK_STATE_AUTH_REQUIRED"},
	}, events.Structured)

	ev, err := events.Decode(events.NATSMsg(msg))
	if err != nil {
		panic(err)
	}
	switch d := ev.Data.(type) {
	case events.Status:
		st, _ := detector.NormalizeState(d.State)
		fmt.Println(ev.Type, ev.Subject, st)
	}
	fmt.Println(ev.DataSchema)
	// Output:
	// a2a.task.status task-42 auth-required
	// https://carddrift.dev/schemas/a2a.task.status/v1.json
}

// Ids of any shape become single, wildcard-free subject tokens.
func ExampleToken() {
	for _, id := range []string{"task-42", "orders.eu.7", "a b*>", "", "ü"} {
		tok := events.Token(id)
		back, _ := events.ParseToken(tok)
		fmt.Printf("%q -> %s -> %q\n", id, tok, back)
	}
	// Output:
	// "task-42" -> task-42 -> "task-42"
	// "orders.eu.7" -> orders=2Eeu=2E7 -> "orders.eu.7"
	// "a b*>" -> a=20b=2A=3E -> "a b*>"
	// "" -> = -> ""
	// "ü" -> =C3=BC -> "ü"
}
