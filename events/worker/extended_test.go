package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// extSecret is the credential every output is searched for.
const extSecret = "tok-9f2c51e0-extended-card-secret"

// extendedAgent is a v1.0 JSON-RPC agent whose public card offers the
// extended card; GetExtendedAgentCard answers only to "Bearer extSecret"
// (else 401), and echoes the token it was sent in its errors, as careless
// servers do.
type extendedAgent struct {
	srv *httptest.Server

	mu       sync.Mutex
	token    string
	skills   []string
	extCalls int
	// streamingOff turns streaming off in the public card only.
	streamingOff bool
	authSeen     []string // Authorization of every request, by path
}

func newExtendedAgent(t *testing.T) *extendedAgent {
	a := &extendedAgent{token: "Bearer " + extSecret, skills: []string{"summarize", "audit-ledger"}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *extendedAgent) card(skills ...string) []byte {
	var s []string
	for _, id := range skills {
		s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
	}
	return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":"1.0.0",`+
		`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
		a.srv.URL, strings.Join(s, ","))
}

func (a *extendedAgent) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.authSeen = append(a.authSeen, r.URL.Path+" "+r.Header.Get("Authorization"))
	w.Header().Set("Cache-Control", "no-cache")
	switch r.URL.Path {
	case "/.well-known/agent-card.json":
		c := a.card("summarize")
		if a.streamingOff {
			c = bytes.Replace(c, []byte(`"streaming":true`), []byte(`"streaming":false`), 1)
		}
		_, _ = w.Write(c)
	case "/a2a":
		body, _ := io.ReadAll(r.Body)
		var rpc struct{ Method string }
		_ = json.Unmarshal(body, &rpc)
		if rpc.Method != "GetExtendedAgentCard" {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		a.extCalls++
		if r.Header.Get("Authorization") != a.token {
			http.Error(w, "token "+r.Header.Get("Authorization")+" not accepted", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, a.card(a.skills...))
	default:
		http.NotFound(w, r)
	}
}

func (a *extendedAgent) set(fn func(a *extendedAgent)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn(a)
}

// syncBuffer is a log sink for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExtendedCard: a task that uses the extended card is pinned on it and
// judged against it at its transitions (a skill removed from the extended
// card only is drift for it); a task on an agent carddrift holds no
// credentials for is pinned unavailable and judged on the public card; a
// refused credential is card.unreachable "unauthorized". Then every output —
// events, log lines, metrics, error texts — is searched for the secret.
func TestExtendedCard(t *testing.T) {
	a := newExtendedAgent(t)
	bare := newExtendedAgent(t) // an agent carddrift holds no credentials for
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, a.srv.URL, extSecret), nil)
	must(t, err)
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	metrics := worker.NewMetrics(reg)
	r := newRig(t, func(o *worker.Options) {
		o.Fetch.Credentials = creds
		o.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
		o.Metrics = metrics
	})
	handled := func(outcome string) int {
		var m dto.Metric
		must(t, metrics.Events.WithLabelValues(events.TypeRequest, outcome).Write(&m))
		return int(m.GetCounter().GetValue())
	}
	ctx := context.Background()
	extDigest, _ := detector.Digest(a.card("summarize", "audit-ledger"))
	pubDigest, _ := detector.Digest(a.card("summarize"))
	bareDigest, _ := detector.Digest(bare.card("summarize"))

	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "ext", AgentURL: a.srv.URL, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true}}))
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "plain", AgentURL: a.srv.URL, SkillID: "summarize"}))
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "nocreds", AgentURL: bare.srv.URL, SkillID: "summarize",
		Requires: events.Requires{ExtendedCard: true}}))
	for _, task := range []string{"ext", "plain", "nocreds"} {
		r.Eventually(task+": card.pinned", func() bool { return len(r.Out().Events(events.TypePinned, task)) == 1 })
	}
	for _, tc := range []struct{ task, digest, extended string }{
		{"ext", extDigest, events.ExtendedPinned},
		{"plain", pubDigest, ""},
		{"nocreds", bareDigest, events.ExtendedUnavailable},
	} {
		p := r.Out().Events(events.TypePinned, tc.task)[0].Data.(events.Pinned)
		if p.Digest != tc.digest || p.Extended != tc.extended {
			t.Errorf("%s: card.pinned digest %s extended %q, want %s %q", tc.task, p.Digest, p.Extended, tc.digest, tc.extended)
		}
	}
	bare.mu.Lock()
	if bare.extCalls != 0 {
		t.Errorf("the agent without credentials was asked for its extended card %d times", bare.extCalls)
	}
	bare.mu.Unlock()

	// The vendor withdraws audit-ledger from the extended card only.
	a.set(func(a *extendedAgent) { a.skills = []string{"summarize"} })
	for _, task := range []string{"ext", "plain", "nocreds"} {
		agent := a.srv.URL
		if task == "nocreds" {
			agent = bare.srv.URL
		}
		must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: agent, Method: "message/stream", Attempt: 1}))
	}
	r.Eventually("ext: card.drift", func() bool { return len(r.Out().Drifts("ext")) == 1 })
	d := r.Out().Drifts("ext")[0]
	if d.Verdict.Action != detector.Abort || d.Pinned.Digest != extDigest || d.Live.Digest != pubDigest || !hasRule(d, detector.RuleSkillRemoved) {
		t.Errorf("ext: card.drift %+v, want abort on skill-removed from %s to %s", d, extDigest, pubDigest)
	}
	r.Eventually("three requests judged", func() bool { return handled("unchanged")+handled("drift") == 3 })
	if n := len(r.Out().Drifts("plain")) + len(r.Out().Drifts("nocreds")); n != 0 {
		t.Errorf("%d card.drift for the tasks judged on the public card, which did not change", n)
	}

	// The vendor rotates the token: the extended card is refused.
	a.set(func(a *extendedAgent) { a.token = "Bearer rotated" })
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("ext: card.unreachable", func() bool { return len(r.Out().Unreachable("ext")) == 1 })
	if u := r.Out().Unreachable("ext")[0]; u.Reason != string(fetcher.ReasonUnauthorized) || !fetcher.IsExtendedKey(u.CardURL) {
		t.Errorf("card.unreachable %+v, want reason unauthorized for the extended card", u)
	}

	// The credential went to the extended card request only.
	a.mu.Lock()
	for _, s := range a.authSeen {
		if strings.HasPrefix(s, "/.well-known/") && strings.Contains(s, extSecret) {
			t.Errorf("the public card request carried the credential: %s", s)
		}
	}
	a.mu.Unlock()

	// The secret is nowhere carddrift writes.
	r.Out().CaughtUp(t)
	var out bytes.Buffer
	for _, typ := range events.Types {
		for _, ev := range r.Out().All(typ) {
			b, _ := json.Marshal(ev)
			out.Write(b)
			fmt.Fprintf(&out, "%v %+v %#v\n", ev, ev, ev)
		}
	}
	out.WriteString(logs.String())
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		_, _ = expfmt.MetricFamilyToText(&out, mf)
	}
	if out.Len() < 1000 || !strings.Contains(out.String(), "card.unreachable") {
		t.Fatalf("too little output to search (%d bytes)", out.Len())
	}
	if strings.Contains(out.String(), extSecret) {
		i := strings.Index(out.String(), extSecret)
		t.Errorf("the secret is in carddrift's output: …%s…", out.String()[max(i-200, 0):min(i+50, out.Len())])
	}
}

func hasRule(d events.Drift, rule string) bool {
	for _, f := range d.Findings {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// TestExtendedClientCardWithoutCredentials: a client that planned on the
// extended card submits it (as its card, or its digest) for a task that
// uses it, on an agent carddrift holds no credentials for: the task is
// pinned on the public card (first fetch, extended unavailable) and judged
// on it — no card.drift at its transitions for skills only the extended
// card has.
func TestExtendedClientCardWithoutCredentials(t *testing.T) {
	bare := newExtendedAgent(t)
	r := newRig(t, func(*worker.Options) {})
	ctx := context.Background()
	extCard := bare.card("summarize", "audit-ledger")
	extDigest, _ := detector.Digest(extCard)
	pubDigest, _ := detector.Digest(bare.card("summarize"))

	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "card", AgentURL: bare.srv.URL, SkillID: "audit-ledger",
		Card: extCard, Requires: events.Requires{ExtendedCard: true}}))
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "digest", AgentURL: bare.srv.URL, SkillID: "audit-ledger",
		CardDigest: extDigest, Requires: events.Requires{ExtendedCard: true}}))
	// The control: the same card for a task that does not use the extended
	// card is the client's card, and drifts (the agent serves another).
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "plain", AgentURL: bare.srv.URL, SkillID: "audit-ledger", Card: extCard}))
	for _, task := range []string{"card", "digest", "plain"} {
		r.Eventually(task+": card.pinned", func() bool { return len(r.Out().Events(events.TypePinned, task)) == 1 })
	}
	for _, tc := range []struct{ task, digest, source, extended string }{
		{"card", pubDigest, events.PinFirstFetch, events.ExtendedUnavailable},
		{"digest", pubDigest, events.PinFirstFetch, events.ExtendedUnavailable},
		{"plain", extDigest, events.PinClientCard, ""},
	} {
		p := r.Out().Events(events.TypePinned, tc.task)[0].Data.(events.Pinned)
		if p.Digest != tc.digest || p.Source != tc.source || p.Extended != tc.extended {
			t.Errorf("%s: card.pinned digest %s source %s extended %q, want %s %s %q",
				tc.task, p.Digest, p.Source, p.Extended, tc.digest, tc.source, tc.extended)
		}
	}
	for _, task := range []string{"card", "digest", "plain"} {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: bare.srv.URL, Method: "message/stream", Attempt: 1}))
	}
	r.Eventually("plain: card.drift", func() bool { return len(r.Out().Drifts("plain")) == 1 })
	r.Out().CaughtUp(t)
	if n := len(r.Out().Drifts("card")) + len(r.Out().Drifts("digest")); n != 0 {
		t.Errorf("%d card.drift for tasks judged on the public card, which did not change", n)
	}
	bare.mu.Lock()
	defer bare.mu.Unlock()
	if bare.extCalls != 0 {
		t.Errorf("the agent without credentials was asked for its extended card %d times", bare.extCalls)
	}
}

// TestExtendedCredentialsRemoved: the operator removes an agent's origin
// from the credentials file (re-read on change) while a task is pinned on
// its extended card. The next transition sees only the public card, which
// lacks the extended card's skill: that is not drift (the task never
// planned on the public card) but extended "unavailable" — a card.pinned
// that says so, on the public card — and later transitions are judged on
// the public card like a task submitted without credentials: no card.drift
// until the public card itself changes, and then one.
func TestExtendedCredentialsRemoved(t *testing.T) {
	a := newExtendedAgent(t)
	path := filepath.Join(t.TempDir(), "credentials.json")
	write := func(body string) { must(t, os.WriteFile(path, []byte(body), 0o600)) }
	write(fmt.Sprintf(`{%q: {"headers": {"Authorization": "Bearer %s"}}}`, a.srv.URL, extSecret))
	creds, err := fetcher.OpenCredentials(path, fetcher.CredentialsFileOptions{Reload: time.Millisecond})
	must(t, err)
	r := newRig(t, func(o *worker.Options) { o.Fetch.Credentials = creds })
	ctx := context.Background()
	extDigest, _ := detector.Digest(a.card("summarize", "audit-ledger"))
	pubDigest, _ := detector.Digest(a.card("summarize"))

	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "ext", AgentURL: a.srv.URL, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true, Streaming: true}, Posture: detector.FailClosed}))
	r.Eventually("card.pinned extended", func() bool { return len(r.Out().Events(events.TypePinned, "ext")) == 1 })
	if p := r.Out().Events(events.TypePinned, "ext")[0].Data.(events.Pinned); p.Digest != extDigest || p.Extended != events.ExtendedPinned {
		t.Fatalf("card.pinned %s extended %q, want %s pinned", p.Digest, p.Extended, extDigest)
	}

	// The origin leaves the file (another agent's entry stays).
	write(`{"https://other.example": {"headers": {"Authorization": "Bearer x"}}}`)
	time.Sleep(5 * time.Millisecond)
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.pinned unavailable", func() bool { return len(r.Out().Events(events.TypePinned, "ext")) == 2 })
	p := r.Out().Events(events.TypePinned, "ext")[1].Data.(events.Pinned)
	if p.Digest != pubDigest || p.Extended != events.ExtendedUnavailable || p.Source != events.PinFirstFetch {
		t.Errorf("card.pinned after the credentials left: %s extended %q source %s, want %s unavailable first-fetch",
			p.Digest, p.Extended, p.Source, pubDigest)
	}
	// A transition's pin is written after its events are published
	// (task.Result: PinFirst only for submissions), so the store may not
	// show it yet when card.pinned arrives.
	var pin task.Pin
	r.Eventually("the pin on the public card stored", func() bool {
		p, _, err := r.Stores.Pins.Get(ctx, "ext")
		pin = p
		return err == nil && p.Digest == pubDigest
	})
	if pin.Extended != events.ExtendedUnavailable || pin.UsesExtended() {
		t.Errorf("stored pin %s extended %q, want the public card %s, unavailable", pin.Digest, pin.Extended, pubDigest)
	}

	// A second transition on the unchanged public card: still no drift.
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("two requests judged", func() bool {
		return r.Handled(events.TypeRequest, "pinned")+r.Handled(events.TypeRequest, "unchanged") == 2
	})
	if d := r.Out().Drifts("ext"); len(d) != 0 {
		t.Fatalf("card.drift after the credentials left: %+v", d[0])
	}

	// The public card itself changes: that is drift for the task now.
	a.set(func(a *extendedAgent) { a.streamingOff = true })
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.drift on the public card", func() bool { return len(r.Out().Drifts("ext")) == 1 })
	if d := r.Out().Drifts("ext")[0]; d.Pinned.Digest != pubDigest || !hasRule(d, detector.RuleStreamingDisabled) || d.Verdict.Action != detector.Abort {
		t.Errorf("card.drift %+v, want abort on streaming-disabled from the public card %s", d, pubDigest)
	}
}
