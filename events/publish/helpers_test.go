package publish_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/natstest"
)

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
