package worker_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

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
