package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/schemas"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestEmitter publishes one event of each lifecycle kind, concurrently, with
// ids that are hard on subjects and headers, and checks ids, sources,
// subjects, Nats-Msg-Ids, the default posture and the trace context.
func TestEmitter(t *testing.T) {
	_, _, js := natstest.StartJetStream(t)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "A2A", Subjects: []string{events.InboundSubjects}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	em, err := client.NewEmitter(js, "urn:client:test")
	if err != nil {
		t.Fatal(err)
	}
	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := publish.WithTraceContext(context.Background(), traceparent, "k=v")
	calls := map[string]func() error{
		"task.1 *>": func() error {
			return em.Submitted(ctx, events.Submitted{TaskID: "task.1 *>", AgentURL: "https://Agent.Example:443/a2a", SkillID: "book-flight"})
		},
		"täsk-ü/%20\"quoted\"": func() error {
			return em.Request(ctx, events.Request{TaskID: "täsk-ü/%20\"quoted\"", AgentURL: "http://10.0.0.7:9000", Method: "SendStreamingMessage", Attempt: 2})
		},
		"t=1": func() error {
			return em.Status(ctx, events.Status{TaskID: "t=1", AgentURL: "https://agent.example", State: "TASK_STATE_INPUT_REQUIRED"})
		},
		"task-1": func() error {
			return em.Artifact(ctx, events.Artifact{TaskID: "task-1", AgentURL: "https://agent.example", ArtifactID: "art-1", MediaTypes: []string{"text/plain"}})
		},
		"   ": func() error {
			return em.Error(ctx, events.Error{TaskID: "   ", AgentURL: "https://agent.example", Method: "message/stream", Code: -32602, Message: "Invalid params\r\nX-Injected: yes"})
		},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for task, call := range calls {
		wg.Go(func() {
			if err := call(); err != nil {
				mu.Lock()
				t.Errorf("task %q: %v", task, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	c, err := js.OrderedConsumer(t.Context(), "A2A", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(len(calls), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ids, tasks := map[string]bool{}, map[string]bool{}
	for m := range batch.Messages() {
		ev, err := events.Decode(m)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if ev.Source != "urn:client:test" || len(ev.ID) != 36 || ids[ev.ID] || ev.Time.IsZero() {
			t.Errorf("event %+v: want source urn:client:test, a fresh UUID and a time", ev)
		}
		ids[ev.ID], tasks[ev.Subject] = true, true
		if got, want := m.Headers().Get(jetstream.MsgIDHeader), "urn:client:test/"+ev.ID; got != want {
			t.Errorf("Nats-Msg-Id = %q, want %q", got, want)
		}
		if s, _ := schemas.Lookup(ev.Type); ev.DataSchema != s.ID {
			t.Errorf("dataschema = %q, want %q", ev.DataSchema, s.ID)
		}
		if ev.Extensions[events.ExtTraceParent] != traceparent || ev.Extensions[events.ExtTraceState] != "k=v" {
			t.Errorf("extensions = %v, want the ctx's trace context", ev.Extensions)
		}
		if s, ok := ev.Data.(events.Submitted); ok && s.Posture != detector.FailClosed {
			t.Errorf("submitted posture = %q, want the default %q", s.Posture, detector.FailClosed)
		}
	}
	if len(tasks) != len(calls) {
		t.Errorf("stored the events of tasks %v, want one of each of the %d calls", tasks, len(calls))
	}
	err = em.Request(ctx, events.Request{TaskID: "t", AgentURL: "https://a.example", Method: "m"})
	if !errors.Is(err, events.ErrSchemaViolation) {
		t.Errorf("Request(attempt 0) = %v, want ErrSchemaViolation", err)
	}
	if _, err := client.NewEmitter(js, "a b"); !errors.Is(err, events.ErrInvalidEvent) {
		t.Errorf("NewEmitter(source %q) = %v, want ErrInvalidEvent", "a b", err)
	}
}
