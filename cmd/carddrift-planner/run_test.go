package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/storetest"
)

// rig is carddrift in process: an embedded JetStream server on loopback
// (its URL is what the planner is given), the stores and one worker.
type rig struct {
	url    string
	js     jetstream.JetStream
	cfg    store.Config
	stores *store.Stores[task.Pin]
	emit   *events.Emitter
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ns, _, js := storetest.StartJetStream(t)
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	cfg.Storage = jetstream.MemoryStorage
	cfg.AckWait = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open[task.Pin](ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	em, err := events.NewEmitter(js, "urn:test:client")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(js, worker.Options{
		Name: "planner-test-worker", Config: cfg,
		Pins: st.Pins, Cards: st.Cards, Leases: st.Leases,
		Fetch: fetcher.Options{
			Allow:        []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			TotalTimeout: 3 * time.Second, ConnectTimeout: time.Second, MinLease: -1,
		},
		DrainTimeout: 3 * time.Second, PinnedTTL: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker Run: %v", err)
		}
		w.Close()
	})
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("worker stopped: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("worker not ready")
	}
	return &rig{url: ns.ClientURL(), js: js, cfg: cfg, stores: st, emit: em}
}

// drained waits until the worker has handled every lifecycle event so far.
func (r *rig) drained(t *testing.T) {
	t.Helper()
	eventually(t, 15*time.Second, "lifecycle events handled", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, cc := range r.cfg.LifecycleConsumers() {
			c, err := r.js.Consumer(ctx, r.cfg.LifecycleStream, cc.Durable)
			if err != nil {
				return false
			}
			info, err := c.Info(ctx)
			if err != nil || info.NumPending > 0 || info.NumAckPending > 0 {
				return false
			}
		}
		return true
	})
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// agent serves a swappable card on loopback.
type agent struct {
	srv  *httptest.Server
	mu   sync.Mutex
	card []byte
}

func newAgent(t *testing.T, card []byte) *agent {
	a := &agent{card: card}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != fetcher.WellKnownPath {
			http.NotFound(w, r)
			return
		}
		a.mu.Lock()
		card := a.card
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(card)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agent) set(card []byte) {
	a.mu.Lock()
	a.card = card
	a.mu.Unlock()
}

// card is a v0.3 card with the skills echo and summarize.
func card(version string, streaming bool, summarizeOut string) []byte {
	return fmt.Appendf(nil, `{"name":"Agent","description":"d","version":%q,"protocolVersion":"0.3.0",
"url":"https://agent.example/a2a","preferredTransport":"JSONRPC","capabilities":{"streaming":%v},
"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"skills":[{"id":"echo","name":"Echo","description":"d","tags":["t"]},
{"id":"summarize","name":"Summarize","description":"d","tags":["t"],"outputModes":[%s]}]}`, version, streaming, summarizeOut)
}

// runPlanner runs the command in-process until it returns.
func runPlanner(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// A fleet of tasks on one agent whose card changes: the reference planner
// cancels the fail-closed task, re-plans the degradable one (a new
// submission that replaces the pin), refuses to re-plan one the live card
// no longer satisfies, and lets the untouched one continue.
func TestPlannerActsOnVerdicts(t *testing.T) {
	r := newRig(t)
	v1 := card("1.0.0", true, `"text/plain","application/json"`)
	v2 := card("1.1.0", false, `"text/plain"`)
	a := newAgent(t, v1)
	ctx := context.Background()
	tasks := map[string]events.Submitted{
		"abort-me":      {SkillID: "echo", Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed},
		"replan-me":     {SkillID: "summarize", Posture: detector.Degrade, Idempotent: true},
		"cannot-replan": {SkillID: "echo", Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, Idempotent: true},
		"continue-me":   {SkillID: "echo", Posture: detector.FailClosed},
	}
	for id, s := range tasks {
		s.TaskID, s.AgentURL, s.Card = id, a.srv.URL, v1
		if err := r.emit.Submitted(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r.drained(t)
	a.set(v2)
	for id := range tasks {
		if err := r.emit.Request(ctx, events.Request{TaskID: id, AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.drained(t)

	code, stdout, stderr := runPlanner(t, "--nats-url", r.url, "--durable", "test-planner", "--from-start",
		"--fetch-allow", "127.0.0.0/8", "--json", "--limit", "4", "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	got := map[string]outcome{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var o outcome
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		got[o.TaskID] = o
	}
	want := map[string][2]string{
		"abort-me":      {string(detector.Abort), didCancel},
		"replan-me":     {string(detector.Replan), didResubmit},
		"cannot-replan": {string(detector.Replan), didCannotAbort},
		"continue-me":   {string(detector.Continue), didContinue},
	}
	for id, w := range want {
		if o := got[id]; string(o.Action) != w[0] || o.Did != w[1] {
			t.Errorf("%s: action %s did %s, want %s %s (reason %q)", id, o.Action, o.Did, w[0], w[1], o.Reason)
		}
	}
	if o := got["cannot-replan"]; !strings.Contains(o.Reason, "streaming") {
		t.Errorf("cannot-replan reason = %q, want the unmet streaming requirement", o.Reason)
	}
	liveDigest, _ := detector.Digest(v2)
	if o := got["replan-me"]; o.Resubmitted != liveDigest {
		t.Errorf("replan-me resubmitted %s, want the live card %s", o.Resubmitted, liveDigest)
	}

	// The re-submission replaced the pin with the live card, keeping the
	// task's requirements; the others' pins are untouched.
	eventually(t, 15*time.Second, "re-planned pin", func() bool {
		p, _, err := r.stores.Pins.Get(ctx, "replan-me")
		return err == nil && p.Digest == liveDigest
	})
	p, _, _ := r.stores.Pins.Get(ctx, "replan-me")
	if p.Source != events.PinClientCard || p.Requirements.SkillID != "summarize" || p.Requirements.Posture != detector.Degrade || !p.Requirements.Idempotent {
		t.Errorf("re-planned pin = %+v", p)
	}
	v1Digest, _ := detector.Digest(v1)
	for _, id := range []string{"abort-me", "cannot-replan", "continue-me"} {
		if p, _, _ := r.stores.Pins.Get(ctx, id); p.Digest != v1Digest {
			t.Errorf("%s: pin %s, want it unchanged (%s)", id, p.Digest, v1Digest)
		}
	}

	// The next transition of the re-planned task is judged against the new
	// pin: no further drift.
	r.drained(t)
	if err := r.emit.Request(ctx, events.Request{TaskID: "replan-me", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	r.drained(t)
	if n := driftCount(t, r, "replan-me"); n != 1 {
		t.Errorf("replan-me has %d card.drift, want 1 (none after the re-plan)", n)
	}
}

func driftCount(t *testing.T, r *rig, taskID string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := r.js.OrderedConsumer(ctx, r.cfg.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"card.drift.*." + events.Token(taskID)}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.NumPending)
}

// Filters reach the subscription: with --actions abort only the abort is
// printed (human format), and --dry-run publishes nothing.
func TestPlannerFiltersAndDryRun(t *testing.T) {
	r := newRig(t)
	v1 := card("1.0.0", true, `"text/plain","application/json"`)
	a := newAgent(t, v1)
	ctx := context.Background()
	for id, s := range map[string]events.Submitted{
		"abort-me":  {SkillID: "echo", Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed},
		"replan-me": {SkillID: "summarize", Posture: detector.Degrade, Idempotent: true},
	} {
		s.TaskID, s.AgentURL, s.Card = id, a.srv.URL, v1
		if err := r.emit.Submitted(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r.drained(t)
	a.set(card("1.1.0", false, `"text/plain"`))
	for _, id := range []string{"abort-me", "replan-me"} {
		if err := r.emit.Request(ctx, events.Request{TaskID: id, AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.drained(t)

	code, stdout, stderr := runPlanner(t, "--nats-url", r.url, "--durable", "aborts", "--from-start", "--actions", "abort",
		"--min-severity", "breaking", "--limit", "1", "--log-level", "warn")
	if code != exitOK || !strings.Contains(stdout, "ABORT") || !strings.Contains(stdout, "task=abort-me") || strings.Contains(stdout, "replan-me") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	code, stdout, stderr = runPlanner(t, "--nats-url", r.url, "--durable", "dry", "--from-start", "--actions", "replan",
		"--dry-run", "--fetch-allow", "127.0.0.0/8", "--limit", "1", "--log-level", "warn")
	if code != exitOK || !strings.Contains(stdout, "task=replan-me") || !strings.Contains(stdout, didResubmit) || !strings.Contains(stdout, "(dry-run)") {
		t.Errorf("dry run: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	v1Digest, _ := detector.Digest(v1)
	r.drained(t)
	if p, _, _ := r.stores.Pins.Get(ctx, "replan-me"); p.Digest != v1Digest {
		t.Errorf("dry run changed the pin to %s", p.Digest)
	}
}

func TestPlannerUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--min-severity", "fatal"},
		{"--actions", "abort,explode"},
		{"--agent", "ftp://x"},
		{"--fetch-allow", "not-a-cidr"},
		{"--limit", "-1"},
		{"--fetch-timeout", "0s"},
		{"extra-arg"},
		{"--no-such-flag"},
	} {
		if code, _, _ := runPlanner(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	t.Setenv("CARDDRIFT_MIN_SEVERITY", "fatal")
	if code, _, stderr := runPlanner(t); code != exitUsage || !strings.Contains(stderr, "min-severity") {
		t.Errorf("CARDDRIFT_MIN_SEVERITY=fatal: exit %d, stderr %q", code, stderr)
	}
}

func TestPlannerNoDeployment(t *testing.T) {
	// A NATS server without the carddrift stores: a runtime error, not a hang.
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	code, _, stderr := runPlanner(t, "--nats-url", ns.ClientURL())
	if code != exitError || !strings.Contains(stderr, "carddrift serve") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
