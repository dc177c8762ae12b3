package replay_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/replay"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/storetest"
)

// rig is carddrift running in-process against an embedded JetStream server
// with t.TempDir() storage: the stores, one worker, a client Emitter and an
// agent whose card the test swaps. Everything stops when the test ends.
type rig struct {
	t      *testing.T
	js     jetstream.JetStream
	cfg    store.Config
	stores *store.Stores[task.Pin]
	emit   *events.Emitter
	agent  *agent
}

func newRig(t *testing.T, card string) *rig {
	t.Helper()
	_, _, js := storetest.StartJetStream(t)
	cfg := store.DefaultConfig()
	cfg.Partitions = 4
	cfg.AckWait = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open[task.Pin](ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	emit, err := events.NewEmitter(js, "urn:client:replay-test")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, js: js, cfg: cfg, stores: st, emit: emit, agent: newAgent(t, card)}
	r.startWorker()
	return r
}

func (r *rig) startWorker() {
	w, err := worker.New(r.js, worker.Options{
		Name: "replay-test-worker", Config: r.cfg,
		Pins: r.stores.Pins, Cards: r.stores.Cards, Leases: r.stores.Leases,
		Fetch: fetcher.Options{
			Allow:          []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			TotalTimeout:   3 * time.Second,
			ConnectTimeout: time.Second,
			MinLease:       -1, // no-cache: every transition revalidates
		},
		DrainTimeout: 5 * time.Second,
		PinnedTTL:    2 * time.Second,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-w.Ready():
	case err := <-done:
		r.t.Fatalf("worker stopped: %v", err)
	case <-time.After(10 * time.Second):
		r.t.Fatal("worker not ready")
	}
	r.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("worker Run: %v", err)
		}
		w.Close()
	})
}

func (r *rig) reader() *replay.Reader {
	r.t.Helper()
	rd, err := replay.New(r.js, replay.Options{Config: r.cfg, Cards: r.stores.Cards, IdleTimeout: 5 * time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	return rd
}

// waitCardEvents waits until the card events stream holds at least n
// messages of type typ (counted by subject).
func (r *rig) waitCardEvents(typ string, n int) {
	r.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	subject := "card." + strings.TrimPrefix(typ, "card.") + ".>"
	for time.Now().Before(deadline) {
		s, err := r.js.Stream(ctx, r.cfg.EventsStream)
		if err != nil {
			r.t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			r.t.Fatal(err)
		}
		total := 0
		for _, c := range info.State.Subjects {
			total += int(c)
		}
		if total >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("timed out waiting for %d %s events", n, typ)
}

// agent is an httptest A2A agent whose card (or status) can be swapped.
type agent struct {
	srv    *httptest.Server
	mu     sync.Mutex
	card   []byte
	status int
}

func newAgent(t *testing.T, card string) *agent {
	a := &agent{card: []byte(card), status: 200}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/.well-known/agent-card.json" {
			http.NotFound(w, req)
			return
		}
		a.mu.Lock()
		card, status := a.card, a.status
		a.mu.Unlock()
		if status != 200 {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(card)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agent) set(card string, status int) {
	a.mu.Lock()
	a.card, a.status = []byte(card), status
	a.mu.Unlock()
}

func (a *agent) URL() string { return a.srv.URL }

// Two versions of one card: v2 turns streaming off (and bumps the version).
const (
	cardV1 = `{"name":"B","version":"1.0.0","protocolVersion":"0.3.0","url":"https://b.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
	cardV2 = `{"name":"B","version":"1.1.0","protocolVersion":"0.3.0","url":"https://b.example.com/a2a","capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
)

func digest(t *testing.T, card string) string {
	t.Helper()
	d, err := detector.Digest([]byte(card))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rigTask is one task the history drives.
type rigTask struct {
	id         string
	posture    detector.Posture
	idempotent bool
	streaming  bool
	want       detector.Action // the verdict carddrift emits
}

var tasks = []rigTask{
	{id: "fc-idem", posture: detector.FailClosed, idempotent: true, streaming: true, want: detector.Abort},
	{id: "fc-once", posture: detector.FailClosed, streaming: true, want: detector.Abort},
	{id: "deg-idem", posture: detector.Degrade, idempotent: true, streaming: true, want: detector.Replan},
	{id: "no-stream", posture: detector.FailClosed, want: detector.Continue},
}

// record drives a history through the real worker: every task is submitted
// with card v1 and sends a plain request; the agent switches to v2; every
// task then sends a capability-dependent request (a verdict each); fc-idem
// fails; the agent goes down and no-stream resubscribes (unreachable).
func (r *rig) record() {
	r.t.Helper()
	ctx := context.Background()
	url := r.agent.URL()
	must := func(err error) {
		r.t.Helper()
		if err != nil {
			r.t.Fatal(err)
		}
	}
	for _, tk := range tasks {
		must(r.emit.Submitted(ctx, events.Submitted{
			TaskID: tk.id, AgentURL: url, SkillID: "summarize",
			Requires: events.Requires{Streaming: tk.streaming}, Posture: tk.posture, Idempotent: tk.idempotent,
			Card: []byte(cardV1),
		}))
		must(r.emit.Request(ctx, events.Request{TaskID: tk.id, AgentURL: url, Method: "message/send", Attempt: 1}))
	}
	r.waitCardEvents(events.TypePinned, len(tasks))
	r.agent.set(cardV2, 200)
	for _, tk := range tasks {
		must(r.emit.Request(ctx, events.Request{TaskID: tk.id, AgentURL: url, Method: "message/stream", Attempt: 1}))
	}
	r.waitCardEvents(events.TypeDrift, len(tasks))
	must(r.emit.Status(ctx, events.Status{TaskID: "fc-idem", AgentURL: url, State: "failed"}))
	r.agent.set(cardV2, 503)
	must(r.emit.Request(ctx, events.Request{TaskID: "no-stream", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	r.waitCardEvents(events.TypeUnreachable, 1)
}
