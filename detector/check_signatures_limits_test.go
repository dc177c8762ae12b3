package detector

import (
	"testing"

	"github.com/carddrift/carddrift/detector/signature"
)

// overLimit is s stopped by a verification limit: the first key found for
// its kid, not verified.
func overLimit(s Signature) Signature {
	s.Verified, s.Reason = false, SignatureOverLimit
	return s
}

// TestSignatureOverLimit: the detector's name for the outcome is package
// signature's, and a signature a verification limit stopped is read as one
// that does not verify: signature-invalid against the pinned signer's key,
// signature-required's "does not verify" under the signed-fleet posture.
func TestSignatureOverLimit(t *testing.T) {
	if SignatureOverLimit != string(signature.ReasonOverLimit) {
		t.Errorf("SignatureOverLimit = %q, signature.ReasonOverLimit = %q", SignatureOverLimit, signature.ReasonOverLimit)
	}
	runCheck(t, "checkSignatureInvalid(pinned, live)", checkSignatureInvalid, []checkCase{
		{
			name: "over the limits under the pinned key", pinned: signedBy(testSigA),
			live: signedBy(overLimit(testSigA), overLimit(testSigA)),
			want: []Finding{{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: "/signatures/0", Before: testSigA, After: overLimit(testSigA),
				Message: `the live card's signature by kid "a" (ES256, key tpA) does not verify, yet that key verified the pinned card: ` +
					`the card was changed after it was signed`,
			}},
		},
		{name: "the pinned key still verifies another signature", pinned: signedBy(testSigA), live: signedBy(overLimit(testSigA), testSigA)},
		{name: "the pin was over the limits too", pinned: signedBy(overLimit(testSigA)), live: signedBy(overLimit(testSigA))},
	})
	f, ok := CheckSigned(signedBy(unverified(testSigB, "no-key"), overLimit(testSigA)))
	want := `the live card's signature by kid "a" (ES256, key tpA) does not verify, and signed cards are required`
	if !ok || f.Rule != RuleSignatureRequired || f.Severity != Breaking || f.Path != "/signatures/1" || f.Message != want {
		t.Errorf("CheckSigned(over-limit) = %+v, %v; want signature-required at /signatures/1: %q", f, ok, want)
	}
}
