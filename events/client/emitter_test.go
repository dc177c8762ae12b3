package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

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
	_, _, js := startLifecycle(t)
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
	if err := em.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}

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
	if err := em.Status(ctx, events.Status{TaskID: "t", AgentURL: "https://a.example", State: "working"}); err != nil || em.Dropped() != 1 {
		t.Errorf("Status after Close = %v, dropped %d; want nil, 1 dropped", err, em.Dropped())
	}
	if _, err := client.NewEmitter(js, "a b"); !errors.Is(err, events.ErrInvalidEvent) {
		t.Errorf("NewEmitter(source %q) = %v, want ErrInvalidEvent", "a b", err)
	}
}

// startLifecycle starts an embedded JetStream with the lifecycle stream A2A.
func startLifecycle(t *testing.T) (*server.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, nc, js := natstest.StartJetStream(t)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "A2A", Subjects: []string{events.InboundSubjects}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	return srv, nc, js
}

func status(task string, n int) events.Status {
	return events.Status{TaskID: fmt.Sprintf("%s-%d", task, n), AgentURL: "https://agent.example", State: "working"}
}

// storedIDs returns the Nats-Msg-Id of every message in stream A2A, with
// the number of times each was stored.
func storedIDs(t *testing.T, js jetstream.JetStream) map[string]int {
	t.Helper()
	info, err := js.Stream(t.Context(), "A2A")
	if err != nil {
		t.Fatal(err)
	}
	st, err := info.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, m := range natstest.ReadStream(t, js, "A2A", int(st.State.Msgs)) {
		ids[m.Headers().Get(jetstream.MsgIDHeader)]++
	}
	return ids
}

// TestEmitterNothingLost publishes from many goroutines, with Flush calls
// among them: what a Flush waited for is stored when it returns, and every
// event is stored once when Close returns, none dropped.
func TestEmitterNothingLost(t *testing.T) {
	_, _, js := startLifecycle(t)
	em, err := client.NewEmitter(js, "urn:client:test", publish.WithBuffer(2048))
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 250
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				if err := em.Status(t.Context(), status(fmt.Sprint("task", c), i)); err != nil {
					t.Errorf("Status: %v", err)
					return
				}
				if i%100 == 99 {
					if err := em.Flush(t.Context()); err != nil {
						t.Errorf("Flush: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := em.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ids := storedIDs(t, js); len(ids) != callers*each {
		t.Fatalf("after Flush: %d events stored, want %d", len(ids), callers*each)
	}
	if err := em.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := em.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for id, n := range storedIDs(t, js) {
		if n != 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	if em.Dropped() != 0 {
		t.Errorf("dropped %d, want 0", em.Dropped())
	}
}

// TestEmitterServerDown: with the server gone, calls return at once and
// nil, the buffer holds its bound (what comes while it is full is dropped
// and counted), and Close gives up at its ctx's end, dropping the rest.
func TestEmitterServerDown(t *testing.T) {
	srv, _, _ := startLifecycle(t)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	em, err := client.NewEmitter(js, "urn:client:test", publish.WithBuffer(8),
		publish.WithTimeout(time.Minute), publish.WithLogger(zerolog.New(&logs)))
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	const sent = 100
	for i := range sent {
		if err := em.Status(t.Context(), status("down", i)); err != nil {
			t.Fatalf("Status with the server down: %v", err)
		}
	}
	if got, held := em.Dropped(), em.Pending(); got != sent-8 || held != 8 {
		t.Errorf("dropped %d, holding %d with a buffer of 8; want %d, 8", got, held, sent-8)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := em.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with the server down = %v, want DeadlineExceeded", err)
	}
	if got := em.Dropped(); got != sent {
		t.Errorf("dropped %d after Close, want all %d", got, sent)
	}
	if n := strings.Count(logs.String(), "events dropped"); n != 1 {
		t.Errorf("logged %d warnings, want 1 (rate-limited): %s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `"dropped":1,`) {
		t.Errorf("the warning does not count the first drop: %s", logs.String())
	}
}

// lostAcks publishes every message for real but reports the first publish
// of each as failed, as when an ack is lost on the way back.
type lostAcks struct {
	jetstream.JetStream
	mu   sync.Mutex
	seen map[string]bool
}

func (l *lostAcks) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f, err := l.JetStream.PublishMsgAsync(m, opts...)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := m.Header.Get(jetstream.MsgIDHeader)
	if l.seen[id] {
		return f, nil
	}
	l.seen[id] = true
	return lostAck{f}, nil
}

type lostAck struct{ jetstream.PubAckFuture }

func (lostAck) Ok() <-chan *jetstream.PubAck { return nil }
func (lostAck) Err() <-chan error {
	ch := make(chan error, 1)
	ch <- nats.ErrDisconnected
	return ch
}

// TestEmitterRetryStoredOnce: every first ack is lost; the emitter
// publishes each event again, and the stream stores each once.
func TestEmitterRetryStoredOnce(t *testing.T) {
	_, _, js := startLifecycle(t)
	em, err := client.NewEmitter(&lostAcks{JetStream: js, seen: map[string]bool{}}, "urn:client:test")
	if err != nil {
		t.Fatal(err)
	}
	const sent = 200
	for i := range sent {
		if err := em.Status(t.Context(), status("retry", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := em.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ids := storedIDs(t, js)
	if len(ids) != sent || em.Dropped() != 0 {
		t.Errorf("stored %d events, dropped %d; want %d, 0", len(ids), em.Dropped(), sent)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
}

// refuseFirst does not publish the first attempt of the messages it is
// told to refuse, failing their futures, as a stream between two leaders
// refuses a message while those behind it are stored by the new one.
type refuseFirst struct {
	jetstream.JetStream
	mu     sync.Mutex
	refuse func(*nats.Msg) bool
	seen   map[string]bool
}

func (r *refuseFirst) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	r.mu.Lock()
	id := m.Header.Get(jetstream.MsgIDHeader)
	refused := r.refuse(m) && !r.seen[id]
	r.seen[id] = true
	r.mu.Unlock()
	if refused {
		return lostAck{}, nil
	}
	return r.JetStream.PublishMsgAsync(m, opts...)
}

// TestEmitterKeepsTaskOrder: the first event of every task is refused
// once, the events behind it are not; each task's events are still stored
// in the order they were emitted (DESIGN: per-task order is a must), and
// none is lost or stored twice.
func TestEmitterKeepsTaskOrder(t *testing.T) {
	_, _, js := startLifecycle(t)
	pub := &refuseFirst{JetStream: js, seen: map[string]bool{},
		refuse: func(m *nats.Msg) bool { return strings.HasPrefix(m.Subject, "a2a.task.request.") }}
	em, err := client.NewEmitter(pub, "urn:client:test")
	if err != nil {
		t.Fatal(err)
	}
	const tasks = 50
	for i := range tasks {
		task := fmt.Sprintf("order-%d", i)
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(em.Request(t.Context(), events.Request{TaskID: task, AgentURL: "https://agent.example", Method: "message/send", Attempt: 1}))
		must(em.Status(t.Context(), events.Status{TaskID: task, AgentURL: "https://agent.example", State: "working"}))
		must(em.Artifact(t.Context(), events.Artifact{TaskID: task, AgentURL: "https://agent.example", ArtifactID: "a", MediaTypes: []string{"text/plain"}}))
	}
	if err := em.Close(t.Context()); err != nil || em.Dropped() != 0 {
		t.Fatalf("Close: %v, dropped %d", err, em.Dropped())
	}
	kinds := map[string][]string{}
	for _, m := range natstest.ReadStream(t, js, "A2A", 3*tasks) {
		tokens := strings.Split(m.Subject(), ".")
		task := tokens[len(tokens)-1]
		kinds[task] = append(kinds[task], tokens[len(tokens)-2])
	}
	for i := range tasks {
		task := fmt.Sprintf("order-%d", i)
		if got := strings.Join(kinds[task], ","); got != "request,status,artifact" {
			t.Errorf("task %s stored as %s, want request,status,artifact", task, got)
		}
	}
}
