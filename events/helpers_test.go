package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/natstest"
)

// withJS runs fn against a fresh embedded JetStream server (storage in a
// test temp dir, random port) with the streams A2A (a2a.task.>) and CARD
// (card.>), and shuts everything down when the test ends.
func withJS(t testing.TB, fn func(js jetstream.JetStream)) {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, subj := range map[string]string{"A2A": events.InboundSubjects, "CARD": events.OutboundSubjects} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Storage: jetstream.MemoryStorage}); err != nil {
			t.Fatalf("CreateStream %s: %v", name, err)
		}
	}
	fn(js)
}

const (
	digestA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestB = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	fpA     = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fpB     = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)

// samples has one data value of every event type, with ids that are hard
// on subjects and headers.
func samples() []events.Data {
	card := json.RawMessage(`{"name":"Travel agent","version":"1.2.0","capabilities":{"streaming":true},"skills":[{"id":"book-flight","name":"Book"}]}`)
	return []events.Data{
		events.Submitted{
			TaskID: "task.1 *>", AgentURL: "https://Agent.Example:443/a2a", SkillID: "book-flight",
			Requires: events.Requires{Streaming: true, InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"}, Security: []string{"oauth"}},
			Posture:  detector.Degrade, Idempotent: true, Card: card, CardURL: "https://agent.example/.well-known/agent-card.json",
		},
		events.Request{TaskID: "täsk-ü/%20\"quoted\"", AgentURL: "http://10.0.0.7:9000", Method: "SendStreamingMessage", Attempt: 2},
		events.Status{TaskID: "t=1", AgentURL: "https://agent.example", State: "TASK_STATE_INPUT_REQUIRED", SkillID: "pick-seat"},
		events.Artifact{TaskID: "task-1", AgentURL: "https://agent.example", ArtifactID: "art-1", MediaTypes: []string{"text/plain", "image/png"}},
		events.Error{TaskID: "   ", AgentURL: "https://agent.example", Method: "message/stream", Code: -32602, Message: "Invalid params\r\nX-Injected: yes"},
		events.Drift{
			TaskID: "task-1", AgentURL: "https://agent.example", CardURL: "https://agent.example/.well-known/agent-card.json",
			Pinned: events.CardRef{Digest: digestA, Fingerprint: fpA, ETag: `"v1"`, FetchedAt: t0},
			Live:   events.CardRef{Digest: digestB, Fingerprint: fpB, ETag: `"v1"`, FetchedAt: t0.Add(time.Minute)},
			Findings: []detector.Finding{
				{Rule: "streaming-disabled", Severity: detector.Breaking, Path: "/capabilities/streaming", Before: true, After: false, Message: "streaming was disabled", Touches: true},
				{Rule: "skill-output-modes-changed", Severity: detector.Breaking, Path: "/skills/0/outputModes", Before: []any{"application/json"}, After: []any{"text/plain"}, Message: "output modes changed", Skill: "book-flight", Touches: true},
				{Rule: "oauth-scope-removed", Severity: detector.Breaking, Path: "/securitySchemes/oauth/flows/clientCredentials/scopes/seats:admin", Before: "Admin", After: nil, Message: "scope removed", Scheme: "oauth", Scope: "seats:admin"},
				{Rule: "extension-removed", Severity: detector.Warning, Path: "/capabilities/extensions/0", Before: map[string]any{"uri": "urn:ext:x"}, After: nil, Message: "extension removed", Extension: "urn:ext:x"},
			},
			Verdict: detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "streaming-disabled touches the task"},
			Trigger: events.Trigger{EventID: "e-1", Type: events.TypeRequest, Source: "urn:client:7"},
		},
		events.Pinned{TaskID: "task-1", AgentURL: "https://agent.example", Digest: digestA, Fingerprint: fpA, Source: events.PinClientCard,
			Extended: events.ExtendedPinned, Trigger: events.Trigger{EventID: "e-0", Type: events.TypeSubmitted, Source: "urn:client:7"}},
		events.Observed{AgentURL: "https://[::1]:8443", CardURL: "https://[::1]:8443/.well-known/agent-card.json", Digest: digestB, Status: 304, ETag: `W/"x"`, FetchedAt: t0, LatencyMs: 12},
		events.Unreachable{AgentURL: "https://agent.example", CardURL: "https://agent.example/.well-known/agent-card.json", Reason: string(fetcher.ReasonTimeout), Detail: "deadline exceeded", TaskID: "task-1", AttemptedAt: t0},
		events.Inconsistent{AgentURL: "https://agent.example", CardURL: "https://agent.example/.well-known/agent-card.json",
			Digests: []events.DigestSeen{{Digest: digestA, Count: 3, FirstSeen: t0, LastSeen: t0.Add(3 * time.Second)}, {Digest: digestB, Count: 2, FirstSeen: t0.Add(time.Second), LastSeen: t0.Add(2 * time.Second)}},
			Window:  events.Duration(2 * time.Minute)},
	}
}

// canonical renders data as JSON for comparison (numbers decode as
// json.Number, which renders like the int it came from).
func canonical(t testing.TB, d events.Data) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("json.Marshal(%T): %v", d, err)
	}
	return string(b)
}

// sameEvent compares two events attribute by attribute and data by JSON.
func sameEvent(t testing.TB, got, want events.Event) {
	t.Helper()
	if got.ID != want.ID || got.Source != want.Source || got.Type != want.Type || got.Subject != want.Subject || got.DataSchema != want.DataSchema || !got.Time.Equal(want.Time) {
		t.Errorf("attributes = {%q %q %q %q %q %v}, want {%q %q %q %q %q %v}",
			got.ID, got.Source, got.Type, got.Subject, got.DataSchema, got.Time,
			want.ID, want.Source, want.Type, want.Subject, want.DataSchema, want.Time)
	}
	if len(got.Extensions) != len(want.Extensions) {
		t.Errorf("extensions = %v, want %v", got.Extensions, want.Extensions)
	}
	for k, v := range want.Extensions {
		if got.Extensions[k] != v {
			t.Errorf("extension %s = %q, want %q", k, got.Extensions[k], v)
		}
	}
	if got.Data == nil || want.Data == nil {
		if got.Data != want.Data {
			t.Errorf("data = %v, want %v", got.Data, want.Data)
		}
		return
	}
	if g, w := canonical(t, got.Data), canonical(t, want.Data); g != w {
		t.Errorf("data = %s\nwant %s", g, w)
	}
}
