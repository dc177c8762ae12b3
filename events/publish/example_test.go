package publish_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// A carddrift worker publishes outcomes with a Publisher. The same drift
// published twice (a redelivery, a second worker) is stored once.
func ExamplePublisher_Publish() {
	js, stop := servicetest.EmbeddedJetStream()
	defer stop()
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CARD", Subjects: []string{events.OutboundSubjects}}); err != nil {
		panic(err)
	}

	pub, _ := publish.New(js, "carddrift/worker-1")
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
