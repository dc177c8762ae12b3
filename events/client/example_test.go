package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/schemas"
)

// lifecycleJetStream starts an embedded JetStream server
// (servicetest.EmbeddedJetStream) with a stream A2A over
// events.InboundSubjects.
func lifecycleJetStream() (js jetstream.JetStream, stop func()) {
	js, stop = servicetest.EmbeddedJetStream()
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "A2A", Subjects: []string{events.InboundSubjects}}); err != nil {
		panic(err)
	}
	return js, stop
}

// An A2A client reports a task's lifecycle with one Emitter call per event.
// Here the ids and the clock are fixed so that the output is stable; a real
// client leaves both to their defaults (random UUIDs, time.Now).
func ExampleEmitter() {
	js, stop := lifecycleJetStream()
	defer stop()
	ctx := context.Background()

	n := 0
	em, err := client.NewEmitter(js, "urn:client:planner-7",
		publish.WithIDs(func() string { n++; return fmt.Sprintf("evt-%d", n) }),
		publish.WithClock(func() time.Time { return time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC) }),
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
	// The calls queued the events; Close publishes what is pending.
	if err := em.Close(ctx); err != nil {
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
	js, stop := lifecycleJetStream()
	defer stop()

	em, _ := client.NewEmitter(js, "urn:client:planner-7")
	defer em.Close(context.Background())
	err := em.Request(context.Background(), events.Request{TaskID: "task-42", AgentURL: "https://travel.example", Method: "message/send", Attempt: 0})

	var verr *schemas.ValidationError
	fmt.Println(errors.Is(err, events.ErrSchemaViolation), errors.As(err, &verr))
	fmt.Println(verr.Field, "-", verr.Reason)
	// Output:
	// true true
	// /attempt - minimum: got 0, want 1
}
