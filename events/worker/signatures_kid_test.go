package worker_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
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
	p := newTrustedPin(t)
	d, rules := p.stream(t, hmacSigned(t, signedCard(p.base, "Reads invoices and pays them."), "a", p.a.Pub))
	if d.Live.Signer == nil || d.Live.Signer.Reason != "unsupported-alg" {
		t.Fatalf("live signer %+v, want the HS256 signature, unsupported-alg", d.Live.Signer)
	}
	if strings.Join(rules, ",") != detector.RuleSignerChanged+","+detector.RuleDescriptiveTextChanged {
		t.Errorf("card.drift %s %v (%s); want [signer-changed descriptive-text-changed]", d.Verdict.Action, rules, d.Verdict.Reason)
	}
}
