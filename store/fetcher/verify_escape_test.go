package fetcher

import (
	"bytes"
	"context"
	"testing"
)

// TestVerifyEscapedSignaturesMember: JSON lets a card spell its
// "signatures" member with escapes ("signatur\u0065s" is the same key to
// every parser, the digest's and the detector's included). A card so
// spelt is still verified: read as unsigned, a card edited after signing
// would have no signature findings at all (the detector sees a signed card
// whose signatures nobody checked), and signature-invalid would never fire.
func TestVerifyEscapedSignaturesMember(t *testing.T) {
	a := newTestSigner(t, "a")
	keys := newJWKSServer(t, jwksJSON(t, a.jwk()), "max-age=600")
	signed := a.sign(t, cardJSON("1", true), keys.url())
	if !bytes.Contains(signed, []byte(`"signatures":`)) {
		t.Fatalf("signed card has no signatures member: %s", signed)
	}
	escaped := bytes.Replace(signed, []byte(`"signatures":`), []byte(`"signatur\u0065s":`), 1)
	tampered := bytes.Replace(escaped, []byte(`"description":"test"`), []byte(`"description":"changed"`), 1)
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUAny}
	f := newFetcher(t, o)
	for _, tc := range []struct {
		name   string
		raw    []byte
		reason string
	}{
		{"escaped, as signed", escaped, "verified"},
		{"escaped, edited after signing", tampered, "invalid-signature"},
	} {
		sigs := f.VerifyAt(context.Background(), "", tc.raw)
		if len(sigs) != 1 || sigs[0].Reason != tc.reason {
			t.Errorf("%s: VerifyAt = %+v; want one signature, %s", tc.name, sigs, tc.reason)
		}
	}
}
