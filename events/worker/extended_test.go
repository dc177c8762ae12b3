package worker_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
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
	logs := &servicetest.Output{} // the worker goroutines' log sink
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

// signedCard is a card on the agent at url, with a description to tamper
// with.
func signedCard(url, description string) string {
	return fmt.Sprintf(`{"name":"Ledger","description":%q,"version":"1.0.0",`+
		`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":["t"]}]}`, description, url)
}

// TestSignedCards: a worker that trusts keys a and b records who signed each
// pinned card (first fetch and client card), and judges the live card's
// signer at every streaming request: re-signed by another key
// (signer-changed, continue), changed after signing (signature-invalid,
// abort, for a task pinned on either key), no longer signed
// (signature-removed, continue).
func TestSignedCards(t *testing.T) {
	a, b := servicetest.NewSigningKey(t, "a"), servicetest.NewSigningKey(t, "b")
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(a.Pub, b.Pub), JKU: fetcher.JKUOff}
	}})
	out := r.Out()
	agent := servicetest.NewAgent(t, "")
	base := agent.URL()
	card := signedCard(base, "Reads invoices.")
	ctx := context.Background()
	submit := func(task string, clientCard string) {
		t.Helper()
		d := events.Submitted{TaskID: task, AgentURL: base, SkillID: "summarize", Requires: events.Requires{Streaming: true}}
		if clientCard != "" {
			d.Card = []byte(clientCard)
		}
		if err := r.Emit.Submitted(ctx, d); err != nil {
			t.Fatal(err)
		}
		out.WaitFor(t, task+" pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, task)) == 1 })
	}
	pinnedSigner := func(task string) *detector.Signature {
		return out.Events(events.TypePinned, task)[0].Data.(events.Pinned).Signer
	}
	stream := func(task string) events.Drift {
		t.Helper()
		if err := r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: base, Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		out.WaitFor(t, task+": card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(task)) == 1 })
		return out.Drifts(task)[0]
	}
	check := func(d events.Drift, action detector.Action, rules ...string) {
		t.Helper()
		var got []string
		for _, f := range d.Findings {
			got = append(got, f.Rule)
		}
		if d.Verdict.Action != action || strings.Join(got, ",") != strings.Join(rules, ",") {
			t.Errorf("%s: card.drift %s %v (%s), want %s %v", d.TaskID, d.Verdict.Action, got, d.Verdict.Reason, action, rules)
		}
	}

	byA := a.Sign(t, card)
	agent.Set(byA)
	submit("first-fetch", "")
	submit("client-card", byA)
	for _, task := range []string{"first-fetch", "client-card"} {
		if s := pinnedSigner(task); s == nil || s.KeyID != "a" || !s.Verified || s.Thumbprint != a.Pub.Thumbprint || s.Source != "trusted" {
			t.Errorf("%s: card.pinned signer %+v, want a, verified by a trusted key", task, s)
		}
	}

	agent.Set(b.Sign(t, card)) // the same content: the same digest
	d := stream("first-fetch")
	check(d, detector.Continue, detector.RuleSignerChanged)
	if d.Pinned.Digest != d.Live.Digest || d.Pinned.Signer == nil || d.Pinned.Signer.KeyID != "a" || d.Live.Signer == nil || d.Live.Signer.KeyID != "b" {
		t.Errorf("signer-changed: pinned %+v, live %+v; want one digest, signers a and b", d.Pinned, d.Live)
	}
	submit("on-b", "")

	tampered := strings.Replace(b.Sign(t, card), "Reads invoices.", "Reads invoices and pays them.", 1)
	agent.Set(tampered)
	check(stream("on-b"), detector.Abort, detector.RuleSignatureInvalid, detector.RuleDescriptiveTextChanged)
	// b is trusted for the agent too: its signature failing on the live
	// card is signature-invalid, whoever signed the pin (before contract
	// v1.2 this was only signer-changed).
	check(stream("client-card"), detector.Abort, detector.RuleSignatureInvalid, detector.RuleDescriptiveTextChanged)

	agent.Set(b.Sign(t, card))
	submit("still-b", "")
	agent.Set(card)
	check(stream("still-b"), detector.Continue, detector.RuleSignatureRemoved)
}

// TestRequireSignedCards: under the posture for signed fleets, a live card
// none of whose signatures verifies aborts every task that observes it, and
// the verdict says why.
func TestRequireSignedCards(t *testing.T) {
	a, stranger := servicetest.NewSigningKey(t, "a"), servicetest.NewSigningKey(t, "stranger")
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) {
		o.RequireSignedCards = true
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(a.Pub), JKU: fetcher.JKUOff}
	}})
	out := r.Out()
	ctx := context.Background()
	for _, tc := range []struct {
		task, reason string
		card         func(string) string
	}{
		{task: "verified", card: func(c string) string { return a.Sign(t, c) }},
		{task: "unsigned", reason: "the live card is not signed", card: func(c string) string { return c }},
		{task: "unknown-key", reason: `no signature of the live card could be verified (kid "stranger" (ES256), unverified: no-key)`,
			card: func(c string) string { return stranger.Sign(t, c) }},
		{task: "invalid", reason: `the live card's signature by kid "a"`,
			card: func(c string) string { return strings.Replace(a.Sign(t, c), "Reads invoices.", "Tampered.", 1) }},
	} {
		t.Run(tc.task, func(t *testing.T) {
			agent := servicetest.NewAgent(t, "")
			agent.Set(tc.card(signedCard(agent.URL(), "Reads invoices.")))
			must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: tc.task, AgentURL: agent.URL(), SkillID: "summarize"}))
			out.WaitFor(t, "pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, tc.task)) == 1 })
			must(t, r.Emit.Request(ctx, events.Request{TaskID: tc.task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
			if tc.reason == "" {
				r.Drained(t, servicetest.WaitTimeout)
				if ds := out.Drifts(tc.task); len(ds) > 0 {
					t.Fatalf("card.drift for a card signed by a trusted key: %s", ds[0].Verdict.Reason)
				}
				return
			}
			out.WaitFor(t, "card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(tc.task)) == 1 })
			d := out.Drifts(tc.task)[0]
			if d.Verdict.Action != detector.Abort || !strings.Contains(d.Verdict.Reason, "signature-required ("+tc.reason) {
				t.Errorf("card.drift %s %q; want abort saying signature-required (%s…", d.Verdict.Action, d.Verdict.Reason, tc.reason)
			}
		})
	}
}

// TestAdversaryEscapedSignaturesMember: an agent (or whoever serves its
// card) edits a card signed by a trusted key and spells the top-level
// member "signatur\u0065s" — the same key to every JSON parser. The
// signature still fails against the trusted key that verified the pin:
// signature-invalid, abort. (Before, the fetcher took the card for unsigned
// without parsing it, the detector saw a signed card with no checked
// signatures, and the only finding was descriptive-text-changed.)
func TestAdversaryEscapedSignaturesMember(t *testing.T) {
	p := newTrustedPin(t)
	if s := p.out.Events(events.TypePinned, "victim")[0].Data.(events.Pinned).Signer; s == nil || !s.Verified || s.Source != "trusted" {
		t.Fatalf("pinned signer %+v, want verified by the trusted key a", s)
	}

	tampered := strings.Replace(p.a.Sign(t, signedCard(p.base, "Reads invoices.")), "Reads invoices.", "Reads invoices and pays them.", 1)
	if !strings.Contains(tampered, `"signatures":`) {
		t.Fatalf("signed card without a signatures member: %s", tampered)
	}
	d, rules := p.stream(t, strings.Replace(tampered, `"signatures":`, `"signatur\u0065s":`, 1))
	if d.Verdict.Action != detector.Abort || strings.Join(rules, ",") != detector.RuleSignatureInvalid+","+detector.RuleDescriptiveTextChanged {
		t.Errorf("card.drift %s %v (%s); want abort [signature-invalid descriptive-text-changed]", d.Verdict.Action, rules, d.Verdict.Reason)
	}
}

// hmacSigned returns card with one signature under kid made with HS256, the
// trusted public key's JWK as the HMAC secret (the classic algorithm
// confusion): what anyone can write for any kid.
func hmacSigned(t *testing.T, card, kid string, pub signature.Key) string {
	t.Helper()
	secret, err := json.Marshal(pub.JWK)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := signature.Canonical([]byte(card), signature.FormServed)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	protected := b64(fmt.Appendf(nil, `{"alg":"HS256","kid":%q,"typ":"JOSE"}`, kid))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(protected + "." + b64(payload)))
	return strings.TrimSuffix(card, "}") + fmt.Sprintf(`,"signatures":[{"protected":%q,"signature":%q}]}`, protected, b64(mac.Sum(nil)))
}

// TestAdversaryUncheckedSignatureUnderPinnedKid: a card signed by a trusted
// key is pinned; the live card is edited and its signature replaced by one
// nobody can check (HS256, an algorithm carddrift refuses) under the pinned
// signer's kid. That is not the pinned signer any more: a signer finding,
// not silence. (Before, the signer rules matched the two by kid alone, as
// they do for a key set outage, and the edited card had no signature
// finding at all.)
func TestAdversaryUncheckedSignatureUnderPinnedKid(t *testing.T) {
	p := newTrustedPin(t)
	d, rules := p.stream(t, hmacSigned(t, signedCard(p.base, "Reads invoices and pays them."), "a", p.a.Pub))
	if d.Live.Signer == nil || d.Live.Signer.Reason != "unsupported-alg" {
		t.Fatalf("live signer %+v, want the HS256 signature, unsupported-alg", d.Live.Signer)
	}
	if strings.Join(rules, ",") != detector.RuleSignerChanged+","+detector.RuleDescriptiveTextChanged {
		t.Errorf("card.drift %s %v (%s); want [signer-changed descriptive-text-changed]", d.Verdict.Action, rules, d.Verdict.Reason)
	}
}

// trustedPin is a worker that trusts key a alone (no jku), an agent whose
// card a signed, and a task "victim" pinned on it by first fetch.
type trustedPin struct {
	r     *servicetest.Rig
	out   *servicetest.Collector
	agent *servicetest.Agent
	base  string
	a     servicetest.SigningKey
}

func newTrustedPin(t *testing.T) *trustedPin {
	t.Helper()
	a := servicetest.NewSigningKey(t, "a")
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(a.Pub), JKU: fetcher.JKUOff}
	}})
	p := &trustedPin{r: r, out: r.Out(), agent: servicetest.NewAgent(t, ""), a: a}
	p.base = p.agent.URL()
	p.agent.Set(a.Sign(t, signedCard(p.base, "Reads invoices.")))
	must(t, r.Emit.Submitted(context.Background(), events.Submitted{TaskID: "victim", AgentURL: p.base, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}}))
	p.out.WaitFor(t, "victim pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, "victim")) == 1 })
	return p
}

// stream serves card and sends victim's streaming request, and returns the
// card.drift it causes and its rule ids.
func (p *trustedPin) stream(t *testing.T, card string) (events.Drift, []string) {
	t.Helper()
	p.agent.Set(card)
	must(t, p.r.Emit.Request(context.Background(), events.Request{TaskID: "victim", AgentURL: p.base, Method: "message/stream", Attempt: 1}))
	p.out.WaitFor(t, "victim: card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts("victim")) == 1 })
	d := p.out.Drifts("victim")[0]
	var rules []string
	for _, f := range d.Findings {
		rules = append(rules, f.Rule)
	}
	return d, rules
}

// TestDeadLetterHangHoldsBackNoOtherTask: the dead-letter stream does not
// answer (its subjects reach a subscriber that never replies, as a stream
// without a leader would), and a publisher puts malformed events in a
// task's partition ahead of that task's transition. The transition gets its
// verdict before the first dead-letter publish has even timed out: the
// dead-letter attempts do not run one after the other in the partition's
// consume callback, 5 s each, in front of every other task.
func TestDeadLetterHangHoldsBackNoOtherTask(t *testing.T) {
	var logs servicetest.Output
	r := newRig(t, func(o *worker.Options) { o.Logger = zerolog.New(&logs) })
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "ok", AgentURL: agent.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))
	r.Eventually("the pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == 1 })

	// The dead-letter stream goes away; a silent subscriber takes its
	// subjects, so that every dead-letter publish waits for its timeout.
	if err := r.JS.DeleteStream(ctx, r.Config.DLQStream); err != nil {
		t.Fatal(err)
	}
	silent, err := r.Conn.Subscribe(r.Config.DLQSubjects, func(*nats.Msg) {})
	must(t, err)
	t.Cleanup(func() { silent.Unsubscribe() })
	must(t, r.Conn.Flush())

	// Malformed events on the task's own subject (its partition), then the
	// task's transition, which the changed card makes breaking.
	const poison = 4
	for i := range poison {
		m := nats.NewMsg(events.TypeStatus + "." + events.Token("ok"))
		m.Data = []byte("not a cloudevent " + string(rune('a'+i)))
		if _, err := r.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	agent.Set(servicetest.WriteupT40)
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ok", AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))

	const failed = "dead-letter publish failed"
	r.Eventually("the task's verdict", func() bool { return len(r.Out().Events(events.TypeDrift, "ok")) > 0 })
	if n := strings.Count(logs.String(), failed); n > 0 {
		t.Fatalf("the verdict came after %d dead-letter publish(es) of the malformed events ahead of it had timed out: the partition waited for them", n)
	}
	r.Eventually("the dead-letter attempts failing", func() bool { return strings.Count(logs.String(), failed) >= 1 })
}

// TestSlowAgentHoldsBackNoOtherTask: one agent's card endpoint answers after
// seconds (slow, not dead) while its tasks transition; tasks on healthy
// agents, in the same partitions, behind them in the stream, get their
// verdicts meanwhile — before the slow agent has answered at all. (Handled
// one message at a time per partition, every healthy verdict waited for the
// slow fetch.)
func TestSlowAgentHoldsBackNoOtherTask(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	const slowFor = 2 * time.Second
	answered := make(chan time.Time, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		time.Sleep(slowFor)
		select {
		case answered <- time.Now():
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprint(w, strings.ReplaceAll(servicetest.WriteupT0, "AGENT", "http://"+req.Host))
	}))
	t.Cleanup(slow.Close)
	healthy := servicetest.NewAgent(t, servicetest.WriteupT0)

	// Every task is pinned on the card its client sent (no fetch at
	// submission).
	const nSlow, nHealthy = 20, 8
	for i := range nSlow {
		card := strings.ReplaceAll(servicetest.WriteupT0, "AGENT", slow.URL)
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("slow-", i), AgentURL: slow.URL, SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: []byte(card)}))
	}
	for i := range nHealthy {
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("ok-", i), AgentURL: healthy.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: healthy.Served(servicetest.WriteupT0)}))
	}
	r.Eventually("every pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == nSlow+nHealthy })

	// The healthy agent turns streaming off; the slow agent's tasks
	// transition first, the healthy ones right behind them.
	healthy.Set(servicetest.WriteupT40)
	for i := range nSlow {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("slow-", i), AgentURL: slow.URL, Method: "message/stream", Attempt: 1}))
	}
	sent := time.Now()
	for i := range nHealthy {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("ok-", i), AgentURL: healthy.URL(), Method: "message/stream", Attempt: 1}))
	}
	r.Eventually("the healthy tasks' verdicts", func() bool {
		n := 0
		for i := range nHealthy {
			n += len(r.Out().Events(events.TypeDrift, fmt.Sprint("ok-", i)))
		}
		return n == nHealthy
	})
	verdicts := time.Now()
	select {
	case at := <-answered:
		if !verdicts.Before(at) {
			t.Fatalf("the healthy tasks' verdicts came %s after they were sent, after the slow agent answered: they waited for it", verdicts.Sub(sent))
		}
	default:
		// The slow agent has not answered yet: the verdicts did not wait.
	}
	for i := range nHealthy {
		d := r.Out().Events(events.TypeDrift, fmt.Sprint("ok-", i))[0].Data.(events.Drift)
		if d.Verdict.Action != detector.Abort {
			t.Errorf("ok-%d: %s, want abort (streaming-disabled)", i, d.Verdict.Action)
		}
	}
	t.Logf("healthy verdicts %s after their transitions; the slow agent answers after %s", verdicts.Sub(sent), slowFor)
}

// TestQueuedEventsAreNotRedelivered: one task's transitions each wait for a
// slow agent (1 s a fetch, no-cache, against a 2 s AckWait), so most of
// them sit queued behind the task's earlier ones. The queued events stay in
// progress: the server does not redeliver them meanwhile. (When only the
// running one was kept alive, every queued event was redelivered each
// AckWait and queued again — a second copy of its bytes the in-flight bound
// no longer counted, handled once more — so that the copies grew with the
// square of the queue.)
func TestQueuedEventsAreNotRedelivered(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("no-cache")
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "queued", AgentURL: agent.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))
	r.Eventually("the pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == 1 })
	before := deliveries(t, r)

	agent.SetDelay(time.Second)
	const n = 8
	for i := range n {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "queued", AgentURL: agent.URL(), Method: "message/stream", Attempt: i + 1}))
	}
	r.Drained(t, 60*time.Second)
	got := deliveries(t, r) - before
	t.Logf("%d transitions of one task: %d deliveries, %d fetches", n, got, agent.Requests())
	if got > n+1 {
		t.Fatalf("%d transitions of one task were delivered %d times: the events queued behind the task's running one were redelivered meanwhile", n, got)
	}
}

// deliveries is how many deliveries the rig's lifecycle consumers made,
// redeliveries included.
func deliveries(t *testing.T, r *servicetest.Rig) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n uint64
	for _, name := range r.Config.ConsumerNames() {
		c, err := r.JS.Consumer(ctx, r.Config.LifecycleStream, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += info.Delivered.Consumer
	}
	return n
}

// Events queued behind a slow one of their task hold no more bytes than
// InflightBytes: the partition waits instead of taking more, every event is
// handled in the end, and the bytes all come back.
func TestInflightBytesBound(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 1 }})
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetDelay(1500 * time.Millisecond)
	const bound = 2 << 20
	w, err := worker.New(r.JS, r.WorkerOptions("inflight", func(o *worker.Options) { o.InflightBytes = bound }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
	<-w.Ready()

	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := w.Inflight(); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	// The task's first event fetches from the slow agent; the large ones
	// queue behind it (per-task order).
	pctx, pcancel := context.WithTimeout(ctx, time.Minute)
	defer pcancel()
	if err := r.Emit.Submitted(pctx, events.Submitted{TaskID: "slow", AgentURL: agent.URL(), SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit.Request(pctx, events.Request{TaskID: "slow", AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		card := fmt.Sprintf(`{"name":"c%d","url":%q,"skills":[{"id":"summarize","name":"s","tags":["t"]}],"description":"%s"}`,
			i, agent.URL(), strings.Repeat("d", 900<<10))
		if err := r.Emit.Submitted(pctx, events.Submitted{TaskID: "slow", AgentURL: agent.URL(), SkillID: "summarize", Card: []byte(card)}); err != nil {
			t.Fatal(err)
		}
	}
	r.Drained(t, time.Minute)
	close(stopSampling)
	<-sampled
	if p := peak.Load(); p > bound || p < 1<<20 {
		t.Errorf("peak in-flight bytes = %d, want between 1 MiB (the large events queued) and the bound %d", p, bound)
	}
	natstest.Eventually(t, 5*time.Second, "in-flight bytes back to 0", func() bool { return w.Inflight() == 0 })
	t.Logf("peak in-flight bytes %d (bound %d)", peak.Load(), bound)
}

func TestPartitionBuffer(t *testing.T) {
	const payload = 1 << 20
	for _, tc := range []struct {
		name  string
		total int64
		n     int
		want  int
	}{
		{"equal parts", 64 << 20, 8, 8 << 20},
		{"at least one message", 4 << 20, 8, payload + worker.PullSlack},
		{"no partitions counts as one", 16 << 20, 0, 16 << 20},
		{"capped to an int32", 1 << 40, 1, 1<<31 - 1},
	} {
		if got := worker.PartitionBuffer(tc.total, tc.n, payload); got != tc.want {
			t.Errorf("%s: PartitionBuffer(%d, %d, %d) = %d, want %d", tc.name, tc.total, tc.n, payload, got, tc.want)
		}
	}
}

// Pull buffers bounded in bytes, as small as they may be: every message the
// stream accepts, up to the server's maximum payload, is still delivered
// and handled, the large ones and the small ones after them.
func TestPullBufferDeliversLargeMessages(t *testing.T) {
	r := newRig(t, func(o *worker.Options) { o.PullBufferBytes = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	maxPayload := int(r.Conn.MaxPayload())
	const agent = "http://127.0.0.1:9"
	for i := range 6 {
		head := fmt.Sprintf(`{"name":"big %d","url":%q,"skills":[{"id":"s","name":"s","tags":["t"]}],"description":"`, i, agent)
		card := head + strings.Repeat("x", maxPayload-len(head)-16<<10) + `"}`
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("big-", i), AgentURL: agent, SkillID: "s", Card: []byte(card)}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if err := r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("small-", i), AgentURL: agent, Method: "tasks/get", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.Drained(t, 30*time.Second)
	for i := range 6 {
		if _, _, err := r.Stores.Pins.Get(ctx, fmt.Sprint("big-", i)); err != nil {
			t.Errorf("task big-%d not pinned: %v", i, err)
		}
	}
}

// deliveredMsg is a lifecycle event delivered for the n-th time, by hand:
// it records how the worker settled it.
type deliveredMsg struct {
	jetstream.Msg // nil: what the worker must not call panics
	msg           *nats.Msg
	n             uint64
	settled       string
}

func (m *deliveredMsg) Data() []byte         { return m.msg.Data }
func (m *deliveredMsg) Headers() nats.Header { return m.msg.Header }
func (m *deliveredMsg) Subject() string      { return m.msg.Subject }
func (m *deliveredMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Stream: "A2A_TASKS", Sequence: jetstream.SequencePair{Stream: 7, Consumer: m.n},
		NumDelivered: m.n, Timestamp: time.Now()}, nil
}
func (m *deliveredMsg) Ack() error                         { m.settled = "ack"; return nil }
func (m *deliveredMsg) Nak() error                         { m.settled = "nak"; return nil }
func (m *deliveredMsg) NakWithDelay(time.Duration) error   { m.settled = "nak"; return nil }
func (m *deliveredMsg) InProgress() error                  { return nil }
func (m *deliveredMsg) Term() error                        { m.settled = "term"; return nil }
func (m *deliveredMsg) TermWithReason(reason string) error { m.settled = "term " + reason; return nil }

// An event delivered more often than MaxDeliver was to be dead-lettered on
// its MaxDeliver-th delivery: that dead letter failed, or handling it ended
// the process. The consumer redelivers without limit, so the worker
// dead-letters it without handling it again — an event that crashes every
// worker that handles it would otherwise crash them forever. On its
// MaxDeliver-th delivery it is still handled (here: its task has no pin,
// so it is acknowledged as no-pin).
func TestPastMaxDeliverIsNotHandled(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.MaxDeliver = 3 }})
	w := r.NewWorker("past-max-deliver", nil)
	ev := events.Event{ID: "e1", Source: "urn:test", Data: events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}}
	m, err := events.Encode(ev, events.Binary)
	if err != nil {
		t.Fatal(err)
	}
	m.Subject = "a2a.task.request.t1"
	ctx := context.Background()

	at := &deliveredMsg{msg: m, n: 3}
	worker.Process(ctx, w, at, ev)
	if at.settled != "ack" {
		t.Errorf("delivery 3 of MaxDeliver 3: settled %q, want ack (handled: no pin)", at.settled)
	}
	past := &deliveredMsg{msg: m, n: 4}
	worker.Process(ctx, w, past, ev)
	if past.settled != "term "+string(worker.ReasonMaxDeliver) {
		t.Fatalf("delivery 4 of MaxDeliver 3: settled %q, want dead-lettered (%s) without handling", past.settled, worker.ReasonMaxDeliver)
	}
	s, err := r.JS.Stream(ctx, r.Config.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := s.GetLastMsgForSubject(ctx, r.Config.DLQSubjects)
	if err != nil {
		t.Fatalf("the dead letter: %v", err)
	}
	if got := dl.Header.Get(worker.HeaderDeadLetterReason); got != string(worker.ReasonMaxDeliver) {
		t.Errorf("dead letter reason %q, want %s", got, worker.ReasonMaxDeliver)
	}
}

// card.observed as contract v1.3 publishes it: at the first fetch, not
// for the revalidations that tell nothing new, then at the heartbeat,
// standing for all of them (fetches, since); a change is published at
// once, and as v1.2 shaped it (no fetches: it stands for its own fetch).
func TestObservedOnChangeOrHeartbeat(t *testing.T) {
	clk := servicetest.NewClock()
	r := newRig(t, func(o *worker.Options) {
		o.Now = clk.Now
		o.Fetch.ObserveHeartbeat = time.Minute
	})
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("max-age=1")
	agent.SetETag(`"v1"`)
	url := agent.URL()
	observed := func() []events.Observed {
		var out []events.Observed
		for _, ev := range r.Out().All(events.TypeObserved) {
			out = append(out, ev.Data.(events.Observed))
		}
		return out
	}
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "t", AgentURL: url, SkillID: "summarize"}))
	r.Eventually("the pin", func() bool { return len(r.Out().Events(events.TypePinned, "t")) == 1 })
	transition := func(n int) {
		t.Helper()
		clk.Advance(2 * time.Second) // past the lease: a revalidation
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "t", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
		r.Eventually("the transition handled", func() bool { return agent.Requests() == int64(n) })
	}
	for i := range 4 {
		transition(2 + i)
	}
	r.Eventually("the first fetch's card.observed", func() bool { return len(observed()) == 1 })
	if o := observed()[0]; o.Status != 200 || o.Fetches != 0 || !o.Since.IsZero() {
		t.Fatalf("first card.observed = %+v, want a 200 standing for its own fetch", o)
	}
	if n := agent.NotModified(); n != 4 {
		t.Fatalf("%d revalidations answered 304, want 4", n)
	}

	since := clk.Now().Add(-6 * time.Second) // the first revalidation
	clk.Advance(time.Minute)
	transition(6)
	r.Eventually("the heartbeat", func() bool { return len(observed()) == 2 })
	if o := observed()[1]; o.Status != 304 || o.Fetches != 5 || !o.Since.Equal(since.UTC()) {
		t.Fatalf("heartbeat = %+v, want a 304 standing for 5 fetches since %v", o, since)
	}

	agent.Set(servicetest.WriteupT40)
	agent.SetETag(`"v2"`)
	transition(7)
	r.Eventually("the change", func() bool { return len(observed()) == 3 })
	if o, first := observed()[2], observed()[0]; o.Status != 200 || o.Digest == first.Digest || o.Fetches != 0 {
		t.Fatalf("change = %+v, want a 200 of another digest standing for its own fetch", o)
	}
}

// TestTraceContextCarried: the W3C trace context of a lifecycle event
// (CloudEvents traceparent/tracestate) is on every event its handling
// publishes — the card.pinned of a submission, the card.drift of a
// transition — in binary and structured mode.
func TestTraceContextCarried(t *testing.T) {
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		t.Run(mode.String(), func(t *testing.T) {
			r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
			out := r.Out()
			agent := servicetest.NewAgent(t, servicetest.WriteupT0)
			task := "traced-" + mode.String()
			publish := func(id, parent string, d events.Data) {
				t.Helper()
				m, err := events.Encode(events.Event{ID: id, Source: "urn:client:traced", Time: time.Now(), Data: d,
					Extensions: map[string]string{events.ExtTraceParent: parent, events.ExtTraceState: "vendor=abc"}}, mode)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.JS.PublishMsg(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			const subParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			const reqParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
			publish("sub-"+task, subParent, events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize",
				Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed})
			out.WaitFor(t, "card.pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, task)) == 1 })
			agent.Set(servicetest.WriteupT40)
			publish("req-"+task, reqParent, events.Request{TaskID: task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1})
			out.WaitFor(t, "card.drift", func(c *servicetest.Collector) bool { return len(c.Events(events.TypeDrift, task)) == 1 })

			for _, c := range []struct {
				ev     events.Event
				parent string
			}{
				{out.Events(events.TypePinned, task)[0], subParent},
				{out.Events(events.TypeDrift, task)[0], reqParent},
			} {
				if got := c.ev.Extensions[events.ExtTraceParent]; got != c.parent {
					t.Errorf("%s traceparent = %q, want %q (the lifecycle event's)", c.ev.Type, got, c.parent)
				}
				if got := c.ev.Extensions[events.ExtTraceState]; got != "vendor=abc" {
					t.Errorf("%s tracestate = %q, want vendor=abc", c.ev.Type, got)
				}
			}
		})
	}
}

// BenchmarkDriftedTransition reports the worker's handling of a
// capability-dependent transition of a drifted task whose lease is fresh —
// the 400-agent mix's commonest event: read the pin, observe the live card
// (the shared lease), judge it against the pinned one, record what the
// core says. Two workers on one embedded JetStream take turns event by
// event, so machine noise hits both alike: "local" reads leases from its
// lease copy and diffs through its memo (the defaults), "store" reads every
// lease from the bucket and diffs every time (LeaseCopyBytes and
// DiffMemoBytes negative, what every transition cost before). Reported per
// event: wall time and process CPU (the embedded server's included) of
// each, and the ratios store/local.
//
//	go test ./events/worker -run '^$' -bench DriftedTransition -benchtime 2000x
func BenchmarkDriftedTransition(b *testing.B) {
	r := servicetest.Start(b, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 0 }})
	ctx := context.Background()
	agent := servicetest.NewAgent(b, servicetest.WriteupT40) // drifted from the pinned T0
	agent.SetCacheControl("max-age=3600")
	pinned := agent.Served(servicetest.WriteupT0)
	tweak := func(off bool) func(*worker.Options) {
		return func(o *worker.Options) {
			o.PinnedTTL, o.Fetch.MinLease, o.Fetch.MaxLease = 0, time.Hour, time.Hour
			if off {
				o.Fetch.LeaseCopyBytes, o.DiffMemoBytes = -1, -1
			}
		}
	}
	type side struct {
		name      string
		w         *worker.Worker
		task      string
		wall, cpu time.Duration
	}
	sides := []*side{
		{name: "local", w: r.NewWorker("local", tweak(false)), task: "local-task"},
		{name: "store", w: r.NewWorker("store", tweak(true)), task: "store-task"},
	}
	seq := uint64(0)
	handle := func(s *side, d events.Data) {
		seq++
		ev := events.Event{ID: fmt.Sprint(s.task, "-", seq), Source: "urn:bench", Type: d.EventType(), Time: time.Now(), Data: d}
		if _, err := worker.HandleAt(ctx, s.w, ev, seq, time.Now()); err != nil {
			b.Fatalf("%s: handle %s: %v", s.name, ev.Type, err)
		}
	}
	transition := func(s *side) events.Data {
		return events.Request{TaskID: s.task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}
	}
	for _, s := range sides {
		handle(s, events.Submitted{TaskID: s.task, AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.Degrade,
			Requires: events.Requires{Streaming: true}, Card: pinned})
		for range 3 { // the drift is published; the lease is fresh
			handle(s, transition(s))
		}
	}
	n := 0
	for b.Loop() {
		for _, s := range sides {
			c0, t0 := cpuTime(), time.Now()
			handle(s, transition(s))
			s.wall += time.Since(t0)
			s.cpu += cpuTime() - c0
		}
		n++
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	for _, s := range sides {
		b.ReportMetric(per(s.wall), s.name+"-ns/event")
		b.ReportMetric(per(s.cpu), s.name+"-cpu-ns/event")
	}
	b.ReportMetric(per(sides[1].wall)/per(sides[0].wall), "store/local-wall")
	b.ReportMetric(per(sides[1].cpu)/per(sides[0].cpu), "store/local-cpu")
	b.ReportMetric(0, "ns/op")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHealthyWhileAgentHangs reports the verdict latency of healthy
// tasks (their transition published → their card.drift received) while one
// agent's card endpoint hangs (it answers after 6 s, beyond the fetch
// timeout) and 40 of its tasks transition first, against the same healthy
// workload with no hanging agent, in the same run: p50 and p99 of both and
// the ratio of the p99s. The bar: healthy p99 < 250 ms while an agent hangs.
//
//	go test ./events/worker -run '^$' -bench HealthyWhileAgentHangs -benchtime 1x -count 3
func BenchmarkHealthyWhileAgentHangs(b *testing.B) {
	var base, hang []time.Duration
	for range b.N {
		base = append(base, healthyLatencies(b, false)...)
		hang = append(hang, healthyLatencies(b, true)...)
	}
	q := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(base, 0.5), "baseline-p50-ms")
	b.ReportMetric(q(base, 0.99), "baseline-p99-ms")
	b.ReportMetric(q(hang, 0.5), "hanging-p50-ms")
	b.ReportMetric(q(hang, 0.99), "hanging-p99-ms")
	b.ReportMetric(q(hang, 0.99)/q(base, 0.99), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

// healthyLatencies runs 80 healthy tasks on 8 agents whose cards turn
// streaming off, behind 40 tasks of a hanging agent when hang is set, and
// returns each healthy task's verdict latency.
func healthyLatencies(b *testing.B, hang bool) []time.Duration {
	b.Helper()
	r := servicetest.Start(b, servicetest.Options{
		Configure: func(c *store.Config) { c.Partitions = 8 },
		Workers:   []string{"w1"},
		Worker:    func(o *worker.Options) { o.Fetch.TotalTimeout = 3 * time.Second },
	})
	ctx := context.Background()
	const nHang, nAgents, perAgent = 40, 8, 10

	var mu sync.Mutex
	received := map[string]time.Time{}
	cons, err := r.JS.OrderedConsumer(ctx, r.Config.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		ev, err := events.Decode(m)
		if err != nil {
			return
		}
		if d, ok := ev.Data.(events.Drift); ok && strings.HasPrefix(d.TaskID, "ok-") {
			mu.Lock()
			if _, seen := received[d.TaskID]; !seen {
				received[d.TaskID] = time.Now()
			}
			mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()

	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-time.After(6 * time.Second):
		case <-req.Context().Done():
			return
		}
		fmt.Fprint(w, strings.ReplaceAll(servicetest.WriteupT0, "AGENT", "http://"+req.Host))
	}))
	defer hanging.Close()
	agents := make([]*servicetest.Agent, nAgents)
	for i := range agents {
		agents[i] = servicetest.NewAgent(b, servicetest.WriteupT0)
	}
	total := nAgents * perAgent
	if hang {
		total += nHang
		for i := range nHang {
			card := strings.ReplaceAll(servicetest.WriteupT0, "AGENT", hanging.URL)
			must(b, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("hang-", i), AgentURL: hanging.URL, SkillID: "summarize",
				Requires: events.Requires{Streaming: true}, Card: []byte(card)}))
		}
	}
	for i := range nAgents * perAgent {
		a := agents[i%nAgents]
		must(b, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("ok-", i), AgentURL: a.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: a.Served(servicetest.WriteupT0)}))
	}
	r.Eventually("every pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == total })

	for _, a := range agents {
		a.Set(servicetest.WriteupT40)
	}
	if hang {
		for i := range nHang {
			must(b, r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("hang-", i), AgentURL: hanging.URL, Method: "message/stream", Attempt: 1}))
		}
	}
	sent := make(map[string]time.Time, nAgents*perAgent)
	for i := range nAgents * perAgent {
		id := fmt.Sprint("ok-", i)
		sent[id] = time.Now()
		must(b, r.Emit.Request(ctx, events.Request{TaskID: id, AgentURL: agents[i%nAgents].URL(), Method: "message/stream", Attempt: 1}))
	}
	r.Eventually("every healthy verdict", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) == nAgents*perAgent
	})
	mu.Lock()
	defer mu.Unlock()
	out := make([]time.Duration, 0, len(sent))
	for id, at := range sent {
		out = append(out, received[id].Sub(at))
	}
	return out
}

// newRig is the servicetest rig as this suite runs it: two partitions, one
// worker w1 (adjusted by configure), a client emitting as vendor A.
func newRig(t *testing.T, configure ...func(*worker.Options)) *servicetest.Rig {
	t.Helper()
	return servicetest.Start(t, servicetest.Options{
		Configure: func(c *store.Config) { c.Partitions = 2 },
		Source:    "urn:client:vendor-a",
		Workers:   []string{"w1"},
		Worker: func(o *worker.Options) {
			for _, c := range configure {
				c(o)
			}
		},
	})
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
	agent := servicetest.NewAgent(t, "")
	pinnedDigest, err := detector.Digest(agent.Served(servicetest.WriteupT0)) // what the client read at T0
	if err != nil {
		t.Fatal(err)
	}
	agent.Set(servicetest.WriteupT40) // T0+40s: the vendor rotates its card
	liveDigest, err := detector.Digest(agent.Served(servicetest.WriteupT40))
	if err != nil {
		t.Fatal(err)
	}
	url := agent.URL()

	// A minimal submission from a client that does not use this module:
	// defaults are fail-closed and not idempotent.
	publishRaw(t, r.JS, events.TypeSubmitted, "sub-1", "wu-fail-closed",
		`{"taskId":"wu-fail-closed","agentUrl":"`+url+`","skillId":"summarize","cardDigest":"`+pinnedDigest+`"}`)
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "wu-degrade", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, Idempotent: true, CardDigest: pinnedDigest}))
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "wu-degrade-once", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, CardDigest: pinnedDigest}))

	for _, tc := range []struct {
		task string
		want detector.Action
	}{
		{"wu-fail-closed", detector.Abort},
		{"wu-degrade", detector.Replan},
		{"wu-degrade-once", detector.Abort}, // degrade cannot re-plan a task that is not idempotent
	} {
		r.Eventually(tc.task+": card.pinned and card.drift", func() bool {
			return len(r.Out().Events(events.TypePinned, tc.task)) > 0 && len(r.Out().Events(events.TypeDrift, tc.task)) > 0
		})
		p := r.Out().Events(events.TypePinned, tc.task)[0].Data.(events.Pinned)
		if p.Source != events.PinClientDigest || p.Digest != pinnedDigest || p.Fingerprint != "" {
			t.Errorf("%s: card.pinned = %+v, want a client-digest pin of %s without fingerprint", tc.task, p, pinnedDigest)
		}
		checkUnknownDrift(t, tc.task, r.Out().Events(events.TypeDrift, tc.task)[0].Data.(events.Drift), pinnedDigest, liveDigest, tc.want)
	}

	// The capability-dependent transitions that follow meet the same cards:
	// no second card.drift.
	for _, task := range []string{"wu-fail-closed", "wu-degrade", "wu-degrade-once"} {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: url, Method: "tasks/sendSubscribe", Attempt: 1}))
	}
	r.Eventually("three transitions judged", func() bool { return r.Handled(events.TypeRequest, "drift") == 3 })
	for _, task := range []string{"wu-fail-closed", "wu-degrade", "wu-degrade-once"} {
		if n := len(r.Out().Events(events.TypeDrift, task)); n != 1 {
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
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	pinnedDigest, _ := detector.Digest(agent.Served(servicetest.WriteupT0))
	liveDigest, _ := detector.Digest(agent.Served(servicetest.WriteupT40))
	url := agent.URL()
	agent.SetStatus(http.StatusServiceUnavailable)

	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "down", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, CardDigest: pinnedDigest}))
	r.Eventually("card.unreachable and card.pinned", func() bool {
		return len(r.Out().Events(events.TypeUnreachable, "down")) == 1 && len(r.Out().Events(events.TypePinned, "down")) == 1
	})
	if p := r.Out().Events(events.TypePinned, "down")[0].Data.(events.Pinned); p.Fingerprint != "" || p.Source != events.PinClientDigest {
		t.Errorf("card.pinned = %+v, want a client-digest pin without fingerprint", p)
	}
	if len(r.Out().Events(events.TypeDrift, "down")) != 0 {
		t.Fatal("card.drift while the agent is unreachable: unreachable is not drift")
	}

	agent.Set(servicetest.WriteupT40)
	agent.SetStatus(http.StatusOK)
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "down", AgentURL: url, Method: "message/send", Attempt: 1})) // needs no card
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "down", AgentURL: url, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.drift", func() bool { return len(r.Out().Events(events.TypeDrift, "down")) > 0 })
	ev := r.Out().Events(events.TypeDrift, "down")[0]
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
func noDeadLetters(t *testing.T, r *servicetest.Rig) {
	t.Helper()
	s, err := r.JS.Stream(context.Background(), r.Config.DLQStream)
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
	r.Metrics.DeadLetters.Collect(ch)
	close(ch)
	if n := len(ch); n != 0 {
		t.Errorf("worker counted dead letters for %d reason(s), want none", n)
	}
	for _, typ := range []string{events.TypeSubmitted, events.TypeRequest} {
		if n := r.Handled(typ, "retry"); n != 0 {
			t.Errorf("%d %s events were retried, want none (a publish was refused?)", n, typ)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const otherDrift = "card.drift-of-another-worker"

// TestPinWriteConflict: a worker whose pin write-back conflicts with
// another writer's does not report success; handled again, it re-reads the
// pin and applies the event on top of the other write, and neither is
// lost.
func TestPinWriteConflict(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 0 }})
	ctx := context.Background()
	pins := r.SecondWriter(r.Stores.Pins, "", otherDrift)
	w := r.NewWorker("conflict", func(o *worker.Options) { o.Pins = pins })
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	ev := func(seq int, d events.Data) events.Event {
		return events.Event{ID: "e" + string(rune('0'+seq)), Source: "urn:test", Type: d.EventType(), Time: time.Unix(int64(100+seq), 0), Data: d}
	}
	handle := func(seq int, d events.Data) error {
		_, err := worker.HandleAt(ctx, w, ev(seq, d), uint64(seq), time.Now())
		return err
	}
	must(t, handle(1, events.Submitted{TaskID: "c", AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.FailClosed,
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))

	schemaError := events.Error{TaskID: "c", AgentURL: agent.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"}
	pins.Arm()
	err := handle(2, schemaError)
	if !errors.Is(err, worker.ErrPinChanged) {
		t.Fatalf("handle with a conflicting pin write = %v, want ErrPinChanged", err)
	}
	if pins.Writes() != 1 {
		t.Fatalf("second writer wrote %d times, want 1", pins.Writes())
	}
	pin, _, err := r.Stores.Pins.Get(ctx, "c")
	must(t, err)
	if !pin.SchemaErrorAt.IsZero() {
		t.Fatalf("the conflicting write replaced the other writer's pin: %+v", pin)
	}

	// Handled again (process retries it; else a redelivery): applied on top.
	must(t, handle(2, schemaError))
	pin, _, err = r.Stores.Pins.Get(ctx, "c")
	must(t, err)
	if pin.SchemaErrorSeq != 2 || pin.SchemaErrorCode != -32602 || !slices.Contains(pin.Reported, otherDrift) {
		t.Fatalf("pin = schema error seq %d code %d, reported %v; want seq 2, code -32602 and the other writer's %q",
			pin.SchemaErrorSeq, pin.SchemaErrorCode, pin.Reported, otherDrift)
	}
}

// TestConsumerRedeliversWithoutLimit: a worker updates a lifecycle consumer
// made by an older release (MaxDeliver 10, the server's give-up) to
// unlimited deliveries: only the worker gives up on an event, by
// dead-lettering it.
func TestConsumerRedeliversWithoutLimit(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 2 }})
	ctx := context.Background()
	for _, cc := range r.Config.LifecycleConsumers() {
		cc.MaxDeliver = topology.DefaultMaxDeliver // as e91b0a3 made it
		cc.PriorityGroups = []string{"carddrift"}
		cc.PriorityPolicy = jetstream.PriorityPolicyPinned
		cc.PinnedTTL = 2 * time.Second
		if _, err := r.JS.CreateOrUpdateConsumer(ctx, r.Config.LifecycleStream, cc); err != nil {
			t.Fatal(err)
		}
	}
	r.StartWorker("upgrade", nil)
	for _, name := range r.Config.ConsumerNames() {
		c, err := r.JS.Consumer(ctx, r.Config.LifecycleStream, name)
		must(t, err)
		info, err := c.Info(ctx)
		must(t, err)
		if info.Config.MaxDeliver != -1 {
			t.Errorf("consumer %s: MaxDeliver %d after the worker started, want -1", name, info.Config.MaxDeliver)
		}
	}
}

// TestShuffledDeliveryGivesSameVerdicts replays the pinning write-up's
// lifecycle for one task in every order a redelivery could produce (all 120
// permutations of its five events, each carrying its stream position) and
// asserts that the verdicts published are the same as in stream order:
// events before the submission wait for it, and a retry handled before the
// -32602 that precedes it in the stream is still judged a blind retry.
func TestShuffledDeliveryGivesSameVerdicts(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) {
		c.Partitions, c.AckWait = 0, time.Second
	}})
	js, cfg := r.JS, r.Config
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT40) // live since before the events
	pinned := agent.Served(servicetest.WriteupT0)
	w := r.NewWorker("order", func(o *worker.Options) { o.PinnedTTL = 0 })

	lifecycle := func(task string) []events.Event {
		ds := []events.Data{
			events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.FailClosed,
				Requires: events.Requires{Streaming: true}, Card: pinned},
			events.Request{TaskID: task, AgentURL: agent.URL(), Method: "tasks/sendSubscribe", Attempt: 1},
			events.Status{TaskID: task, AgentURL: agent.URL(), State: "input-required", SkillID: "translate"},
			events.Error{TaskID: task, AgentURL: agent.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"},
			events.Request{TaskID: task, AgentURL: agent.URL(), Method: "tasks/send", Attempt: 2},
		}
		out := make([]events.Event, len(ds))
		for i, d := range ds {
			out[i] = events.Event{ID: fmt.Sprintf("%s-%d", task, i), Source: "urn:test", Type: d.EventType(), Time: time.Unix(int64(100+i), 0), Data: d}
		}
		return out
	}

	// verdicts runs the events in the given delivery order (redelivering
	// those told to wait at the end) and returns the rule sets and actions of
	// the card.drift events published for the task.
	verdicts := func(task string, order []int) []string {
		evs := lifecycle(task)
		queue := slices.Clone(order)
		stored := time.Now()
		for n := 0; len(queue) > 0; n++ {
			if n > 50 {
				t.Fatalf("%s: events keep waiting: %v", task, queue)
			}
			i := queue[0]
			queue = queue[1:]
			wait, err := worker.HandleAt(ctx, w, evs[i], uint64(i+1), stored)
			switch {
			case wait:
				queue = append(queue, i) // NAKed: redelivered later
			case err != nil:
				t.Fatalf("%s: handle event %d: %v", task, i, err)
			}
		}
		filter := "card.drift.*." + events.Token(task)
		stream, err := js.Stream(ctx, cfg.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		total := uint64(0)
		for _, c := range info.State.Subjects {
			total += c
		}
		cons, err := js.OrderedConsumer(ctx, cfg.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range total {
			m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			d := ev.Data.(events.Drift)
			var rules []string
			for _, f := range d.Findings {
				if !slices.Contains(rules, f.Rule) {
					rules = append(rules, f.Rule)
				}
			}
			sort.Strings(rules)
			got = append(got, string(d.Verdict.Action)+" "+strings.Join(rules, ","))
		}
		sort.Strings(got)
		return got
	}

	want := verdicts("in-order", []int{0, 1, 2, 3, 4})
	if len(want) != 3 {
		t.Fatalf("in stream order: %d card.drift, want 3 (card diff, +unmodeled-skill, +blind-retry): %v", len(want), want)
	}
	for _, needle := range []string{detector.RuleUnmodeledSkill, detector.RuleBlindRetry, detector.RuleStreamingDisabled} {
		if !strings.Contains(strings.Join(want, "|"), needle) {
			t.Fatalf("in stream order, no %s: %v", needle, want)
		}
	}
	n := 0
	for _, perm := range permutations([]int{0, 1, 2, 3, 4}) {
		n++
		task := fmt.Sprintf("perm-%d", n)
		if got := verdicts(task, perm); !slices.Equal(got, want) {
			t.Errorf("delivery order %v: verdicts %v, want %v", perm, got, want)
		}
	}
	if n != 120 {
		t.Fatalf("ran %d permutations, want 120", n)
	}
}

func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// TestStaleLeaseCannotContradictPin reproduces, deterministically, the race
// that made the 400-agent demo abort healthy tasks: a lease holds the
// agent's old card (fetched before the rotation, valid for a minute); the
// vendor rotates the card; a client discovers the new card and submits a
// task pinned on it; the task's capability-dependent transition comes inside
// the lease. The lease's observation was verified before the pin, so it
// cannot contradict it: the worker revalidates unconditionally (one fetch)
// and finds the pinned card live — no card.drift.
func TestStaleLeaseCannotContradictPin(t *testing.T) {
	r := newRig(t, func(o *worker.Options) {
		o.Fetch.MinLease = time.Minute // the lease holds for the whole test
	})
	ctx := context.Background()
	// The agent serves its card with a long max-age and an ETag derived from
	// the card's version only (as some servers do): after a rotation that
	// keeps the version, a revalidation answers 304 although the content
	// changed.
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("max-age=60")
	agent.SetETag(`"v1.0.0"`)
	url := agent.URL()

	// A first-fetch task makes carddrift take the lease on the old card.
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "early", AgentURL: url, SkillID: "summarize"}))
	r.Eventually("the early task's pin", func() bool { return len(r.Out().Events(events.TypePinned, "early")) == 1 })
	oldDigest := r.Out().Events(events.TypePinned, "early")[0].Data.(events.Pinned).Digest

	// The vendor rotates (same version, so the same ETag); the client reads
	// the new card and plans a streaming-free task against it.
	agent.Set(servicetest.WriteupT40)
	newCard := string(agent.Served(servicetest.WriteupT40))
	newDigest, err := detector.Digest([]byte(newCard))
	if err != nil {
		t.Fatal(err)
	}
	if newDigest == oldDigest {
		t.Fatal("the rotation did not change the digest")
	}
	time.Sleep(20 * time.Millisecond) // the pin is made after the lease's full fetch
	before := agent.Requests()
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "late", AgentURL: url, SkillID: "translate", Card: []byte(newCard)}))
	r.Eventually("the late task's pin", func() bool { return len(r.Out().Events(events.TypePinned, "late")) == 1 })
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "late", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	r.Eventually("the transition handled", func() bool {
		return r.Handled(events.TypeRequest, "unchanged")+r.Handled(events.TypeRequest, "drift") == 1
	})

	if d := r.Out().Events(events.TypeDrift, "late"); len(d) != 0 {
		dr := d[0].Data.(events.Drift)
		t.Fatalf("card.drift for a task pinned on the live card: %s, live %s (pinned %s)", dr.Verdict.Reason, dr.Live.Digest, dr.Pinned.Digest)
	}
	if got := agent.Requests() - before; got != 1 {
		t.Fatalf("the agent answered %d requests for the transition, want exactly 1 (the unconditional revalidation)", got)
	}
	if n := r.Handled(events.TypeRequest, "unchanged"); n != 1 {
		t.Fatalf("transition outcome unchanged = %d, want 1", n)
	}
}

// refusingCards lets the first refusals Puts fail, as a full store or one
// slower than the fetcher's StoreTimeout does.
type refusingCards struct {
	store.Cards
	refusals atomic.Int64
}

func (c *refusingCards) Put(ctx context.Context, digest string, raw []byte) error {
	if c.refusals.Add(-1) >= 0 {
		return errors.New("insufficient storage")
	}
	return c.Cards.Put(ctx, digest, raw)
}

// A task pinned on the card the worker fetched names a body that is stored:
// when the store refuses the body, the submission is retried (not pinned on
// a digest no later transition could find — that would judge the task's
// next drift pinned-card-unknown, and replay could not re-evaluate it), and
// once the store takes it the pin is made and its body is there. Before,
// a body put that failed (a store refusing writes, or slower than the
// fetcher's StoreTimeout) was ignored and the task pinned anyway.
func TestPinNamesAStoredBody(t *testing.T) {
	cards := &refusingCards{}
	cards.refusals.Store(2)
	r := newRig(t, func(o *worker.Options) {
		cards.Cards = o.Cards
		o.Cards = cards
	})
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	ctx := context.Background()
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "stored", AgentURL: agent.URL(), SkillID: "summarize"}))
	r.Out().WaitFor(t, "the task's card.pinned", func(c *servicetest.Collector) bool {
		return len(c.Events(events.TypePinned, "stored")) > 0
	})
	pinned := r.Out().Events(events.TypePinned, "stored")[0].Data.(events.Pinned)
	if cards.refusals.Load() > 1 {
		t.Fatal("the store refused no put: the test did not exercise a refusal")
	}
	if _, err := r.Stores.Cards.Get(ctx, pinned.Digest); err != nil {
		t.Errorf("body of the pinned digest %s: %v, want it stored", pinned.Digest, err)
	}
}

// TestSplitBrain drives a streaming task through capability-dependent
// transitions while its agent serves the write-up's two cards in turn. The
// agent answers no-cache, so every transition is one fetch, shared by two
// workers through the lease: an alternation (A→B→A→B) publishes one
// card.inconsistent and, while it lasts, card.drift carries
// replicas-disagree; a rolling deploy (A→B, never back) and a single flip
// and back publish none.
func TestSplitBrain(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1", "w2"}})
	ctx := context.Background()
	a, b := servicetest.WriteupT0, servicetest.WriteupT40
	run := func(t *testing.T, task string, agent *servicetest.Agent, seq []string) {
		t.Helper()
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: agent.Served(a)}))
		r.Eventually("the pin", func() bool { return len(r.Out().Events(events.TypePinned, task)) == 1 })
		for _, card := range seq {
			agent.Set(card)
			before := agent.Requests()
			must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
			r.Eventually("the transition's fetch and verdict", func() bool { return agent.Requests() > before })
			r.Drained(t, servicetest.WaitTimeout)
		}
	}
	inconsistent := func(agent *servicetest.Agent) []events.Inconsistent {
		var out []events.Inconsistent
		for _, ev := range r.Out().All(events.TypeInconsistent) {
			if d := ev.Data.(events.Inconsistent); d.AgentURL == agent.URL() {
				out = append(out, d)
			}
		}
		return out
	}
	carries := func(d events.Drift) bool {
		return slices.ContainsFunc(d.Findings, func(f detector.Finding) bool { return f.Rule == detector.RuleReplicasDisagree })
	}

	t.Run("alternation is split brain", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "split", agent, []string{b, a, b, a, b})
		r.Out().WaitFor(t, "one card.inconsistent", func(c *servicetest.Collector) bool { return len(inconsistent(agent)) == 1 })
		got := inconsistent(agent)[0]
		if len(got.Digests) != 2 || got.Window != events.Duration(2*60e9) || got.CardURL != agent.URL()+"/.well-known/agent-card.json" {
			t.Errorf("card.inconsistent = %+v", got)
		}
		drifts := r.Out().Drifts("split")
		if len(drifts) != 2 || carries(drifts[0]) || !carries(drifts[1]) {
			t.Fatalf("card.drift = %d, want the first without replicas-disagree and one with it once the episode began: %+v", len(drifts), drifts)
		}
		if drifts[1].Verdict.Action != detector.Abort {
			t.Errorf("a warning changed the verdict: %+v", drifts[1].Verdict)
		}

		// Restarts and crashes: other workers carry on, the episode is
		// reported already; a worker that published but crashed before
		// marking it publishes the same event again, which the stream drops.
		lease, rev, err := r.Stores.Leases.Get(ctx, got.CardURL)
		must(t, err)
		if !lease.Replicas.Reported {
			t.Fatalf("episode not marked on the lease: %+v", lease.Replicas)
		}
		lease.Replicas.Reported = false
		_, err = r.Stores.Leases.Update(ctx, lease, rev)
		must(t, err)
		stop := r.StartWorker("w3", nil)
		run(t, "split-2", agent, []string{a, b})
		stop()
		dup := published(t, r.Metrics, events.TypeInconsistent, "duplicate")
		if n := len(inconsistent(agent)); n != 1 || dup < 1 {
			t.Errorf("after a restart and a lost mark: %d card.inconsistent in the stream (%v duplicates dropped), want 1", n, dup)
		}
	})
	t.Run("rolling deploy is not", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "rolling", agent, []string{a, a, b, b, b})
		drifts := r.Out().Drifts("rolling")
		if len(drifts) != 1 || carries(drifts[0]) {
			t.Errorf("card.drift = %+v, want one without replicas-disagree", drifts)
		}
		if n := len(inconsistent(agent)); n != 0 {
			t.Errorf("%d card.inconsistent for a rolling deploy", n)
		}
	})
	t.Run("single flip and back is not", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "flip", agent, []string{a, b, b, a, a})
		if n := len(inconsistent(agent)); n != 0 {
			t.Errorf("%d card.inconsistent for a single flip", n)
		}
		if drifts := r.Out().Drifts("flip"); len(drifts) != 1 || carries(drifts[0]) {
			t.Errorf("card.drift = %+v, want one without replicas-disagree", drifts)
		}
	})
}

// published reads carddrift_published_total{type,result}.
func published(t *testing.T, m *worker.Metrics, typ, result string) float64 {
	var v dto.Metric
	if err := m.Published.WithLabelValues(typ, result).Write(&v); err != nil {
		t.Fatal(err)
	}
	return v.GetCounter().GetValue()
}
