package planner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	eventpub "github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/topology"
)

// withJS starts the servicetest rig with no worker, its streams and buckets
// in memory, and returns its connection and stores.
func withJS(t testing.TB) (jetstream.JetStream, *store.Stores[task.Pin]) {
	t.Helper()
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Storage = jetstream.MemoryStorage }})
	return r.JS, r.Stores
}

// cardSpec describes a v0.3 agent card for tests.
type cardSpec struct {
	Version     string
	Streaming   bool
	Push        bool
	Skills      []skillSpec
	InputModes  []string // card defaults
	OutputModes []string
	Schemes     []string // http bearer schemes by name
	Security    []string // one requirement naming these schemes
}

type skillSpec struct {
	ID          string
	OutputModes []string
}

func (c cardSpec) JSON() []byte {
	skills := []map[string]any{}
	for _, s := range c.Skills {
		m := map[string]any{"id": s.ID, "name": s.ID, "description": "skill " + s.ID, "tags": []string{"test"}}
		if s.OutputModes != nil {
			m["outputModes"] = s.OutputModes
		}
		skills = append(skills, m)
	}
	in, out := c.InputModes, c.OutputModes
	if in == nil {
		in = []string{"text/plain"}
	}
	if out == nil {
		out = []string{"text/plain"}
	}
	card := map[string]any{
		"name": "Test agent", "description": "an agent for tests", "version": orDefault(c.Version, "1.0.0"),
		"protocolVersion": "0.3.0", "url": "https://agent.example/a2a", "preferredTransport": "JSONRPC",
		"capabilities":      map[string]any{"streaming": c.Streaming, "pushNotifications": c.Push},
		"defaultInputModes": in, "defaultOutputModes": out,
		"skills": skills,
	}
	if len(c.Schemes) > 0 {
		schemes := map[string]any{}
		for _, s := range c.Schemes {
			schemes[s] = map[string]any{"type": "http", "scheme": "bearer"}
		}
		card["securitySchemes"] = schemes
	}
	if len(c.Security) > 0 {
		req := map[string][]string{}
		for _, s := range c.Security {
			req[s] = []string{}
		}
		card["security"] = []any{req}
	}
	b, err := json.Marshal(card)
	if err != nil {
		panic(err)
	}
	return b
}

// String is the card's JSON, as an agent serves it.
func (c cardSpec) String() string { return string(c.JSON()) }

func (c cardSpec) Card(t testing.TB) *detector.Card {
	t.Helper()
	card, err := detector.Parse(c.JSON())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return card
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func digest(t testing.TB, raw []byte) string {
	t.Helper()
	d, err := detector.Digest(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// drift builds the card.drift a worker would publish for a task planned
// against pinned with requirements req, when the agent now serves live: its
// findings and verdict are the worker's decision (task.Decide).
func drift(t testing.TB, taskID, agentURL string, pinned, live cardSpec, req detector.Requirements) events.Drift {
	t.Helper()
	p, l := pinned.Card(t), live.Card(t)
	pd, ld := digest(t, p.Raw), digest(t, l.Raw)
	d := task.Decide(task.Pin{TaskID: taskID, AgentURL: agentURL, Digest: pd, Requirements: req}, p,
		task.Observation{Digest: ld, Card: l}, nil, task.Policy{})
	return events.Drift{
		TaskID: taskID, AgentURL: agentURL, CardURL: agentURL + fetcher.WellKnownPath,
		Pinned:   events.CardRef{Digest: pd, Fingerprint: detector.Fingerprint(p)},
		Live:     events.CardRef{Digest: ld, Fingerprint: detector.Fingerprint(l), FetchedAt: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)},
		Findings: d.Findings, Verdict: d.Verdict,
		Trigger: events.Trigger{EventID: "evt-" + taskID, Type: events.TypeRequest, Source: "urn:test:client"},
	}
}

func publish(t testing.TB, js jetstream.JetStream, ds ...events.Drift) {
	t.Helper()
	pub, err := eventpub.New(js, "carddrift/test-worker")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range ds {
		if _, err := pub.Publish(ctx, events.Event{Data: d}); err != nil {
			t.Fatalf("publish drift of %s: %v", d.TaskID, err)
		}
	}
}

// publishLegacy publishes drifts as a worker before contract v1.1 wrote
// them: findings without touches.
func publishLegacy(t testing.TB, js jetstream.JetStream, ds ...events.Drift) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range ds {
		m, err := events.Encode(events.Event{ID: "legacy-" + d.TaskID, Source: "carddrift/test-worker", Data: d}, events.Binary)
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal(m.Data, &data); err != nil {
			t.Fatal(err)
		}
		for _, f := range data["findings"].([]any) {
			delete(f.(map[string]any), "touches")
		}
		if m.Data, err = json.Marshal(data); err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("publish legacy drift of %s: %v", d.TaskID, err)
		}
	}
}

// consumerIdle reports whether the durable has nothing pending or unacked.
func consumerIdle(t testing.TB, js jetstream.JetStream, durable string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := service.Backlog(ctx, js, topology.DefaultEventsStream, durable)
	if err != nil {
		t.Fatal(err)
	}
	return n == 0
}

func taskName(i int) string { return fmt.Sprintf("task-%03d", i) }
