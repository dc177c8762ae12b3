package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/storetest"
)

// The pinning write-up's cards: the client read writeupT0 at discovery; the
// vendor served writeupT40 from T0+40s (streaming off, translate added,
// bearer swapped for oauth2).
const (
	writeupT0 = `{"name":"Vendor B","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]}]}`
	writeupT40 = `{"name":"Vendor B","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"securitySchemes":{"oauth2":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://b.example/token","scopes":{"tasks":"run"}}}}},
"security":[{"oauth2":["tasks"]}],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]},
{"id":"translate","name":"Translate","description":"Translates text","tags":["text"]}]}`
)

// cardAgent serves a card that can be swapped, or a status other than 200.
type cardAgent struct {
	srv    *httptest.Server
	mu     sync.Mutex
	card   string
	status int
}

func newCardAgent(t *testing.T) *cardAgent {
	a := &cardAgent{status: http.StatusOK}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		card, status := strings.ReplaceAll(a.card, "AGENT", a.srv.URL), a.status
		a.mu.Unlock()
		if r.URL.Path != "/.well-known/agent-card.json" || status != http.StatusOK {
			http.Error(w, "unavailable", max(status, http.StatusNotFound))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write([]byte(card))
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *cardAgent) set(card string, status int) {
	a.mu.Lock()
	a.card, a.status = card, status
	a.mu.Unlock()
}

// served returns the bytes the agent serves for card.
func (a *cardAgent) served(card string) []byte {
	return []byte(strings.ReplaceAll(card, "AGENT", a.srv.URL))
}

// rig runs one worker over an embedded JetStream server and collects every
// outbound card.* event.
type rig struct {
	js      jetstream.JetStream
	cfg     store.Config
	metrics *worker.Metrics
	emit    *events.Emitter

	mu  sync.Mutex
	out []events.Event
}

func newRig(t *testing.T, configure ...func(*worker.Options)) *rig {
	t.Helper()
	_, _, js := storetest.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	cfg.AckWait = 2 * time.Second
	st, err := store.Open[task.Pin](ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{js: js, cfg: cfg, metrics: worker.NewMetrics(nil)}
	if r.emit, err = events.NewEmitter(js, "urn:client:vendor-a"); err != nil {
		t.Fatal(err)
	}
	opts := worker.Options{
		Name: "w1", Config: cfg, Pins: st.Pins, Cards: st.Cards, Leases: st.Leases, Metrics: r.metrics,
		Fetch: fetcher.Options{
			Allow:        []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			TotalTimeout: 3 * time.Second, ConnectTimeout: time.Second,
			MinLease: -1, // no-cache: every transition revalidates
		},
		DrainTimeout: 5 * time.Second, PinnedTTL: 2 * time.Second,
	}
	for _, c := range configure {
		c(&opts)
	}
	w, err := worker.New(js, opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker Run = %v", err)
		}
		w.Close()
	})
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("worker stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("worker not ready within 10s")
	}

	cons, err := js.OrderedConsumer(ctx, cfg.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		ev, err := events.Decode(m)
		if err != nil {
			t.Errorf("outbound event on %s does not decode: %v", m.Subject(), err)
			return
		}
		r.mu.Lock()
		r.out = append(r.out, ev)
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return r
}

// events returns the collected events of a type for a task.
func (r *rig) events(typ, taskID string) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Event
	for _, ev := range r.out {
		if ev.Type == typ && ev.TaskID() == taskID {
			out = append(out, ev)
		}
	}
	return out
}

// handled returns how many events of a type the worker finished with an
// outcome.
func (r *rig) handled(typ, outcome string) int {
	var m dto.Metric
	if err := r.metrics.Events.WithLabelValues(typ, outcome).Write(&m); err != nil {
		panic(err)
	}
	return int(m.GetCounter().GetValue())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// publishRaw publishes data as a binary-mode CloudEvent, as a client that
// does not use this module would.
func publishRaw(t *testing.T, js jetstream.JetStream, typ, id, taskID, data string) {
	t.Helper()
	m := nats.NewMsg("")
	m.Subject = typ + "." + events.Token(taskID)
	m.Header.Set("ce-specversion", "1.0")
	m.Header.Set("ce-id", id)
	m.Header.Set("ce-source", "urn:client:raw")
	m.Header.Set("ce-type", typ)
	m.Header.Set("content-type", "application/json")
	m.Data = []byte(data)
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// TestClientDigestOfUnseenCard is the first write-up's case end to end
// through a worker: the client pinned the card by digest at discovery, the
// vendor rotated the card before the task was submitted, so carddrift never
// sees the body the task was planned against. The pin is published without
// a fingerprint, the task gets one card.drift with pinned-card-unknown (abort
// under fail-closed, replan for an idempotent degrade task), the
// capability-dependent transition that follows does not repeat it, and
// nothing is dead-lettered.
func TestClientDigestOfUnseenCard(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	agent := newCardAgent(t)
	pinnedDigest, err := detector.Digest(agent.served(writeupT0)) // what the client read at T0
	if err != nil {
		t.Fatal(err)
	}
	agent.set(writeupT40, http.StatusOK) // T0+40s: the vendor rotates its card
	liveDigest, err := detector.Digest(agent.served(writeupT40))
	if err != nil {
		t.Fatal(err)
	}
	url := agent.srv.URL

	// A minimal submission from a client that does not use this module:
	// defaults are fail-closed and not idempotent.
	publishRaw(t, r.js, events.TypeSubmitted, "sub-1", "wu-fail-closed",
		`{"taskId":"wu-fail-closed","agentUrl":"`+url+`","skillId":"summarize","cardDigest":"`+pinnedDigest+`"}`)
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "wu-degrade", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, Idempotent: true, CardDigest: pinnedDigest}))
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "wu-degrade-once", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, CardDigest: pinnedDigest}))

	for _, tc := range []struct {
		task string
		want detector.Action
	}{
		{"wu-fail-closed", detector.Abort},
		{"wu-degrade", detector.Replan},
		{"wu-degrade-once", detector.Abort}, // degrade cannot re-plan a task that is not idempotent
	} {
		waitFor(t, tc.task+": card.pinned and card.drift", func() bool {
			return len(r.events(events.TypePinned, tc.task)) > 0 && len(r.events(events.TypeDrift, tc.task)) > 0
		})
		p := r.events(events.TypePinned, tc.task)[0].Data.(events.Pinned)
		if p.Source != events.PinClientDigest || p.Digest != pinnedDigest || p.Fingerprint != "" {
			t.Errorf("%s: card.pinned = %+v, want a client-digest pin of %s without fingerprint", tc.task, p, pinnedDigest)
		}
		checkUnknownDrift(t, tc.task, r.events(events.TypeDrift, tc.task)[0].Data.(events.Drift), pinnedDigest, liveDigest, tc.want)
	}

	// The capability-dependent transitions that follow meet the same cards:
	// no second card.drift.
	for _, task := range []string{"wu-fail-closed", "wu-degrade", "wu-degrade-once"} {
		must(t, r.emit.Request(ctx, events.Request{TaskID: task, AgentURL: url, Method: "tasks/sendSubscribe", Attempt: 1}))
	}
	waitFor(t, "three transitions judged", func() bool { return r.handled(events.TypeRequest, "drift") == 3 })
	for _, task := range []string{"wu-fail-closed", "wu-degrade", "wu-degrade-once"} {
		if n := len(r.events(events.TypeDrift, task)); n != 1 {
			t.Errorf("%s: %d card.drift, want 1", task, n)
		}
	}
	noDeadLetters(t, r)
}

// TestClientDigestUnknownAtTransition: the agent was down when the task was
// submitted by digest, so the pin could not be checked; the card came back
// rotated, and the first capability-dependent transition publishes
// pinned-card-unknown.
func TestClientDigestUnknownAtTransition(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	agent := newCardAgent(t)
	pinnedDigest, _ := detector.Digest(agent.served(writeupT0))
	liveDigest, _ := detector.Digest(agent.served(writeupT40))
	url := agent.srv.URL
	agent.set(writeupT0, http.StatusServiceUnavailable)

	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "down", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, CardDigest: pinnedDigest}))
	waitFor(t, "card.unreachable and card.pinned", func() bool {
		return len(r.events(events.TypeUnreachable, "down")) == 1 && len(r.events(events.TypePinned, "down")) == 1
	})
	if p := r.events(events.TypePinned, "down")[0].Data.(events.Pinned); p.Fingerprint != "" || p.Source != events.PinClientDigest {
		t.Errorf("card.pinned = %+v, want a client-digest pin without fingerprint", p)
	}
	if len(r.events(events.TypeDrift, "down")) != 0 {
		t.Fatal("card.drift while the agent is unreachable: unreachable is not drift")
	}

	agent.set(writeupT40, http.StatusOK)
	must(t, r.emit.Request(ctx, events.Request{TaskID: "down", AgentURL: url, Method: "message/send", Attempt: 1})) // needs no card
	must(t, r.emit.Request(ctx, events.Request{TaskID: "down", AgentURL: url, Method: "message/stream", Attempt: 1}))
	waitFor(t, "card.drift", func() bool { return len(r.events(events.TypeDrift, "down")) > 0 })
	ev := r.events(events.TypeDrift, "down")[0]
	d := ev.Data.(events.Drift)
	checkUnknownDrift(t, "down", d, pinnedDigest, liveDigest, detector.Abort)
	if d.Trigger.Type != events.TypeRequest {
		t.Errorf("card.drift trigger = %+v, want the a2a.task.request that streams", d.Trigger)
	}
	noDeadLetters(t, r)
}

func checkUnknownDrift(t *testing.T, task string, d events.Drift, pinned, live string, want detector.Action) {
	t.Helper()
	if d.Pinned.Digest != pinned || d.Pinned.Fingerprint != "" || d.Live.Digest != live || d.Live.Fingerprint == "" {
		t.Errorf("%s: card.drift pinned %+v, live %+v; want pinned %s without fingerprint, live %s with one", task, d.Pinned, d.Live, pinned, live)
	}
	if len(d.Findings) != 1 || d.Findings[0].Rule != detector.RulePinnedCardUnknown || !d.Findings[0].Touches || !d.TouchesKnown {
		t.Errorf("%s: card.drift findings = %+v, want one pinned-card-unknown that touches the task", task, d.Findings)
	}
	if d.Verdict.Action != want {
		t.Errorf("%s: card.drift action = %s (%s), want %s", task, d.Verdict.Action, d.Verdict.Reason, want)
	}
}

// noDeadLetters checks that the dead-letter stream is empty and the worker
// counted no dead letter.
func noDeadLetters(t *testing.T, r *rig) {
	t.Helper()
	s, err := r.js.Stream(context.Background(), r.cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("dead-letter stream holds %d events, want none", info.State.Msgs)
	}
	ch := make(chan prometheus.Metric, 64)
	r.metrics.DeadLetters.Collect(ch)
	close(ch)
	if n := len(ch); n != 0 {
		t.Errorf("worker counted dead letters for %d reason(s), want none", n)
	}
	for _, typ := range []string{events.TypeSubmitted, events.TypeRequest} {
		if n := r.handled(typ, "retry"); n != 0 {
			t.Errorf("%d %s events were retried, want none (a publish was refused?)", n, typ)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
