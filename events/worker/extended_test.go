package worker_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
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
