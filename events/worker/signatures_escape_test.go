package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/workertest"
)

// TestAdversaryEscapedSignaturesMember: an agent (or whoever serves its
// card) edits a card signed by a trusted key and spells the top-level
// member "signatur\u0065s" — the same key to every JSON parser. The
// signature still fails against the trusted key that verified the pin:
// signature-invalid, abort. (Before, the fetcher took the card for unsigned
// without parsing it, the detector saw a signed card with no checked
// signatures, and the only finding was descriptive-text-changed.)
func TestAdversaryEscapedSignaturesMember(t *testing.T) {
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
	if s := out.Events(events.TypePinned, "victim")[0].Data.(events.Pinned).Signer; s == nil || !s.Verified || s.Source != "trusted" {
		t.Fatalf("pinned signer %+v, want verified by the trusted key a", s)
	}

	tampered := strings.Replace(a.Sign(t, card), "Reads invoices.", "Reads invoices and pays them.", 1)
	if !strings.Contains(tampered, `"signatures":`) {
		t.Fatalf("signed card without a signatures member: %s", tampered)
	}
	agent.Set(strings.Replace(tampered, `"signatures":`, `"signatur\u0065s":`, 1))
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "victim", AgentURL: base, Method: "message/stream", Attempt: 1}))
	out.WaitFor(t, "victim: card.drift", func(c *workertest.Collector) bool { return len(c.Drifts("victim")) == 1 })
	d := out.Drifts("victim")[0]
	var rules []string
	for _, f := range d.Findings {
		rules = append(rules, f.Rule)
	}
	if d.Verdict.Action != detector.Abort || strings.Join(rules, ",") != detector.RuleSignatureInvalid+","+detector.RuleDescriptiveTextChanged {
		t.Errorf("card.drift %s %v (%s); want abort [signature-invalid descriptive-text-changed]", d.Verdict.Action, rules, d.Verdict.Reason)
	}
}
