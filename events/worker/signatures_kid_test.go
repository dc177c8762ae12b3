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
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/workertest"
)

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
	a := workertest.NewSigningKey(t, "a")
	r := workertest.Start(t, workertest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(a.Pub), JKU: fetcher.JKUOff}
	}})
	out := r.Out()
	agent := workertest.NewAgent(t, "")
	base := agent.URL()
	card := signedCard(base, "Reads invoices.")
	ctx := context.Background()

	agent.Set(a.Sign(t, card))
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "victim", AgentURL: base, SkillID: "summarize", Requires: events.Requires{Streaming: true}}))
	out.WaitFor(t, "victim pinned", func(c *workertest.Collector) bool { return len(c.Events(events.TypePinned, "victim")) == 1 })

	agent.Set(hmacSigned(t, signedCard(base, "Reads invoices and pays them."), "a", a.Pub))
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "victim", AgentURL: base, Method: "message/stream", Attempt: 1}))
	out.WaitFor(t, "victim: card.drift", func(c *workertest.Collector) bool { return len(c.Drifts("victim")) == 1 })
	d := out.Drifts("victim")[0]
	var rules []string
	for _, f := range d.Findings {
		rules = append(rules, f.Rule)
	}
	if d.Live.Signer == nil || d.Live.Signer.Reason != "unsupported-alg" {
		t.Fatalf("live signer %+v, want the HS256 signature, unsupported-alg", d.Live.Signer)
	}
	if strings.Join(rules, ",") != detector.RuleSignerChanged+","+detector.RuleDescriptiveTextChanged {
		t.Errorf("card.drift %s %v (%s); want [signer-changed descriptive-text-changed]", d.Verdict.Action, rules, d.Verdict.Reason)
	}
}
