package worker_test

import (
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

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
