package detector

import (
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/signature"
)

// Signatures as a verifier reports them: key A and key B verified (A from
// the operator's key set, B from a jku), and helpers for the other outcomes.
var (
	testSigA = Signature{KeyID: "a", Alg: "ES256", Thumbprint: "tpA", Source: "trusted", Verified: true, Reason: SignatureVerified}
	testSigB = Signature{KeyID: "b", Alg: "ES256", JKU: "https://planner.example.com/jwks.json", Thumbprint: "tpB", Source: "jku", Verified: true, Reason: SignatureVerified}
)

// invalid is s failing against its key.
func invalid(s Signature) Signature {
	s.Verified, s.Reason, s.Source = false, SignatureInvalid, "trusted"
	return s
}

// unverified is s whose key could not be found or fetched (no thumbprint).
func unverified(s Signature, reason string) Signature {
	s.Verified, s.Reason, s.Thumbprint, s.Source = false, reason, "", ""
	return s
}

// signedBy is testCard with signatures.
func signedBy(sigs ...Signature) *Card {
	return modified(func(c *Card) { c.Signatures = sigs })
}

// servedSigned is testCard as served signed but not verified (Parse's view:
// HasSignatures, no Signatures).
func servedSigned() *Card {
	return modified(func(c *Card) { c.HasSignatures = true })
}

func TestCheckSignatureAdded(t *testing.T) {
	runCheck(t, "checkSignatureAdded(pinned, live)", checkSignatureAdded, []checkCase{
		{
			name: "signed by a verified key", pinned: testCard(), live: signedBy(testSigA),
			want: []Finding{{
				Rule: RuleSignatureAdded, Severity: Info, Path: "/signatures", Before: false, After: true,
				Message: `the card is now signed (kid "a" (ES256, key tpA), verified by a trusted key)`,
			}},
		},
		{
			name: "signed, not verified", pinned: testCard(), live: servedSigned(),
			want: []Finding{{
				Rule: RuleSignatureAdded, Severity: Info, Path: "/signatures", Before: false, After: true,
				Message: `the card is now signed (signatures not checked)`,
			}},
		},
		{name: "re-signed", pinned: signedBy(testSigA), live: signedBy(testSigB)},
		{name: "signature removed", pinned: signedBy(testSigA), live: testCard()},
	})
}

func TestCheckSignatureRemoved(t *testing.T) {
	runCheck(t, "checkSignatureRemoved(pinned, live)", checkSignatureRemoved, []checkCase{
		{
			name: "no longer signed", pinned: signedBy(testSigB), live: testCard(),
			want: []Finding{{
				Rule: RuleSignatureRemoved, Severity: Warning, Path: "/signatures", Before: true, After: false,
				Message: `the card is no longer signed; the pinned card was (kid "b" (ES256, key tpB), verified by a jku key)`,
			}},
		},
		{
			name: "pinned unverified", pinned: signedBy(unverified(testSigA, "no-key")), live: testCard(),
			want: []Finding{{
				Rule: RuleSignatureRemoved, Severity: Warning, Path: "/signatures", Before: true, After: false,
				Message: `the card is no longer signed; the pinned card was (kid "a" (ES256), unverified: no-key)`,
			}},
		},
		{name: "still signed", pinned: signedBy(testSigA), live: servedSigned()},
		{name: "signature added", pinned: testCard(), live: signedBy(testSigA)},
	})
}

func TestCheckSignatureInvalid(t *testing.T) {
	runCheck(t, "checkSignatureInvalid(pinned, live)", checkSignatureInvalid, []checkCase{
		{
			name: "the pinned key no longer verifies", pinned: signedBy(testSigA), live: signedBy(invalid(testSigA)),
			want: []Finding{{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: "/signatures/0", Before: testSigA, After: invalid(testSigA),
				Message: `the live card's signature by kid "a" (ES256, key tpA) does not verify, yet that key verified the pinned card: ` +
					`the card was changed after it was signed`,
			}},
		},
		{
			name: "beside a co-signer that does not vouch for the pin", pinned: signedBy(testSigA),
			live: signedBy(testSigB, invalid(testSigA)),
			want: []Finding{{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: "/signatures/1", Before: testSigA, After: invalid(testSigA),
				Message: `the live card's signature by kid "a" (ES256, key tpA) does not verify, yet that key verified the pinned card: ` +
					`the card was changed after it was signed`,
			}},
		},
		{name: "the pinned key still verifies another signature", pinned: signedBy(testSigA), live: signedBy(invalid(testSigA), testSigA)},
		{name: "a jku key that never verified the pin", pinned: signedBy(testSigA), live: signedBy(fromJKU(invalid(testSigB)))},
		{name: "a trusted key vouches for the live card", pinned: signedBy(testSigA), live: signedBy(invalid(rekeyedB), testSigA2)},
		{
			// Row 5 of issue 19: a client's card in another form than the
			// one signed (its signature fails), then the agent changes the
			// card: its signature fails against that key over new content.
			name: "the pinned card's signer, never verified (a client card in another form)", pinned: withRaw(signedBy(invalid(testSigA)), `{"a":1,"signatures":[{}]}`),
			live: withRaw(signedBy(invalid(testSigA)), `{"a":2,"signatures":[{}]}`),
			want: []Finding{{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: "/signatures/0", Before: invalid(testSigA), After: invalid(testSigA),
				Message: `the live card's signature by kid "a" (ES256, key tpA), the key the pinned card's signature names, does not verify ` +
					`over the live card: the card was changed after it was signed`,
			}},
		},
		{
			name:   "the pinned card's signer failed on the same content",
			pinned: withRaw(signedBy(invalid(testSigA)), `{"a":1,"signatures":[1]}`), live: withRaw(signedBy(invalid(testSigA)), `{"a":1,"signatures":[2]}`),
		},
		{
			name: "a trusted key, the pin never verified", pinned: signedBy(unverified(testSigA, "keys-unavailable")), live: signedBy(invalid(testSigA)),
			want: []Finding{{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: "/signatures/0", Before: unverified(testSigA, "keys-unavailable"), After: invalid(testSigA),
				Message: `the live card's signature by kid "a" (ES256, key tpA) does not verify, and that key is trusted for this agent: ` +
					`the card was changed after it was signed, or someone else signed it in that key's name`,
			}},
		},
		{
			name: "a trusted key, the pin unsigned", pinned: testCard(), live: signedBy(invalid(testSigA)),
			want: []Finding{{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: "/signatures/0", Before: nil, After: invalid(testSigA),
				Message: `the live card's signature by kid "a" (ES256, key tpA) does not verify, and that key is trusted for this agent: ` +
					`the card was changed after it was signed, or someone else signed it in that key's name`,
			}},
		},
		{name: "a jku key, the pin never verified", pinned: signedBy(unverified(testSigA, "keys-unavailable")), live: signedBy(fromJKU(invalid(testSigA)))},
		{name: "live not verified at all", pinned: signedBy(testSigA), live: servedSigned()},
		{name: "a new signature by the same key", pinned: signedBy(testSigA), live: signedBy(testSigA)},
	})
}

// testSigA2 is another key trusted for the agent; rekeyedB a trusted key
// under kid "b".
var (
	testSigA2 = Signature{KeyID: "a2", Alg: "ES256", Thumbprint: "tpA2", Source: "trusted", Verified: true, Reason: SignatureVerified}
	rekeyedB  = Signature{KeyID: "b", Alg: "ES256", Thumbprint: "tpB", Source: "trusted", Verified: true, Reason: SignatureVerified}
)

// fromJKU is s with a key from its jku.
func fromJKU(s Signature) Signature {
	s.Source = "jku"
	return s
}

// noSource is s verified by a key whose source is not said.
func noSource(s Signature) Signature {
	s.Source = ""
	return s
}

// withRaw is c served as raw (its digest is that of raw).
func withRaw(c *Card, raw string) *Card {
	c.Raw = []byte(raw)
	return c
}

func TestCheckSignerChanged(t *testing.T) {
	rekeyed := testSigA // kid "a" now names another key
	rekeyed.Thumbprint = "tpA2"
	runCheck(t, "checkSignerChanged(pinned, live)", checkSignerChanged, []checkCase{
		{
			name: "rotated to another key", pinned: signedBy(testSigA), live: signedBy(testSigB),
			want: []Finding{{
				Rule: RuleSignerChanged, Severity: Warning, Path: "/signatures/0", Before: testSigA, After: testSigB,
				Message: `the card is now signed by kid "b" (ES256, key tpB), verified by a jku key, no longer by the pinned card's signer ` +
					`kid "a" (ES256, key tpA), verified by a trusted key: it may not be the same vendor any more`,
			}},
		},
		{
			name: "same kid, another key", pinned: signedBy(testSigA), live: signedBy(rekeyed),
			want: []Finding{{
				Rule: RuleSignerChanged, Severity: Warning, Path: "/signatures/0", Before: testSigA, After: rekeyed,
				Message: `the card is now signed by kid "a" (ES256, key tpA2), verified by a trusted key, no longer by the pinned card's signer ` +
					`kid "a" (ES256, key tpA), verified by a trusted key: it may not be the same vendor any more`,
			}},
		},
		{
			name: "another kid whose key could not be found", pinned: signedBy(testSigA), live: signedBy(unverified(testSigB, "no-key")),
			want: []Finding{{
				Rule: RuleSignerChanged, Severity: Warning, Path: "/signatures/0", Before: testSigA, After: unverified(testSigB, "no-key"),
				Message: `the card is now signed by kid "b" (ES256), unverified: no-key, no longer by the pinned card's signer ` +
					`kid "a" (ES256, key tpA), verified by a trusted key: it may not be the same vendor any more`,
			}},
		},
		{
			name: "the verified signer speaks for the card", pinned: signedBy(testSigA),
			live: signedBy(unverified(testSigA, "keys-unavailable"), testSigB),
			want: []Finding{{
				Rule: RuleSignerChanged, Severity: Warning, Path: "/signatures/1", Before: testSigA, After: testSigB,
				Message: `the card is now signed by kid "b" (ES256, key tpB), verified by a jku key, no longer by the pinned card's signer ` +
					`kid "a" (ES256, key tpA), verified by a trusted key: it may not be the same vendor any more`,
			}},
		},
		{name: "a new signature by the same key", pinned: signedBy(testSigA), live: signedBy(testSigA)},
		{name: "a co-signer added during a rotation", pinned: signedBy(testSigA), live: signedBy(testSigB, testSigA)},
		{name: "the key set is down", pinned: signedBy(testSigA), live: signedBy(unverified(testSigA, "keys-unavailable"))},
		{
			name: "an entry no key was looked up for, under the pinned kid", pinned: signedBy(testSigA),
			live: signedBy(unverified(Signature{KeyID: "a", Alg: "HS256"}, "unsupported-alg")),
			want: []Finding{{
				Rule: RuleSignerChanged, Severity: Warning, Path: "/signatures/0", Before: testSigA,
				After: unverified(Signature{KeyID: "a", Alg: "HS256"}, "unsupported-alg"),
				Message: `the card is now signed by kid "a" (HS256), unverified: unsupported-alg, no longer by the pinned card's signer ` +
					`kid "a" (ES256, key tpA), verified by a trusted key: it may not be the same vendor any more`,
			}},
		},
		{name: "the signature fails: signature-invalid instead", pinned: signedBy(testSigA), live: signedBy(invalid(testSigA))},
		{name: "not verified", pinned: servedSigned(), live: signedBy(testSigB)},
		{name: "unsigned", pinned: testCard(), live: signedBy(testSigB)},
	})
}

func TestCheckSigned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		live    *Card
		ok      bool
		path    string
		message string
	}{
		{name: "verified", live: signedBy(unverified(testSigB, "no-key"), testSigA)},
		{name: "verified by a trusted key beside a jku key", live: signedBy(testSigB, testSigA)},
		{
			// Row 4 of issue 19: re-signed with the attacker's own key, named
			// at the attacker's own jku.
			name: "verified by a jku key only", live: signedBy(testSigB), ok: true, path: "/signatures/0",
			message: `no signature of the live card verifies with a key trusted for this agent (kid "b" (ES256, key tpB), verified by a jku key: ` +
				`a key the signature's own jku names is the signer's claim, not trust), and signed cards are required`,
		},
		{
			name: "verified by a key of unknown source", live: signedBy(noSource(testSigA)), ok: true, path: "/signatures/0",
			message: `no signature of the live card verifies with a key trusted for this agent (kid "a" (ES256, key tpA), verified: ` +
				`a key the signature's own jku names is the signer's claim, not trust), and signed cards are required`,
		},
		{name: "unsigned", live: testCard(), ok: true, path: "", message: "the live card is not signed, and signed cards are required"},
		{name: "nil", live: nil, ok: true, path: "", message: "the live card is not signed, and signed cards are required"},
		{
			name: "not checked", live: servedSigned(), ok: true, path: "/signatures",
			message: "the live card's signatures were not checked, and signed cards are required",
		},
		{
			name: "invalid", live: signedBy(unverified(testSigB, "no-key"), invalid(testSigA)), ok: true, path: "/signatures/1",
			message: `the live card's signature by kid "a" (ES256, key tpA) does not verify, and signed cards are required`,
		},
		{
			name: "keys unavailable", live: signedBy(unverified(testSigB, "keys-unavailable")), ok: true, path: "/signatures/0",
			message: `no signature of the live card could be verified (kid "b" (ES256), unverified: keys-unavailable), and signed cards are required`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := CheckSigned(tc.live)
			if ok != tc.ok {
				t.Fatalf("CheckSigned() = %+v, %v; want ok %v", f, ok, tc.ok)
			}
			if !ok {
				return
			}
			if f.Rule != RuleSignatureRequired || f.Severity != Breaking || f.Path != tc.path || f.Message != tc.message {
				t.Errorf("CheckSigned() = %s %v %q %q; want %s breaking %q %q",
					f.Rule, f.Severity, f.Path, f.Message, RuleSignatureRequired, tc.path, tc.message)
			}
		})
	}
}

// Evaluate over one card content: signatures are the only difference, and
// the posture's finding says why in the verdict.
func TestEvaluateSignatures(t *testing.T) {
	req := Requirements{SkillID: "summarize"}
	for _, tc := range []struct {
		name         string
		pinned, live *Card
		posture      bool
		rules        []string
		action       Action
		reason       string
	}{
		{name: "same signer", pinned: signedBy(testSigA), live: signedBy(testSigA), action: Continue, reason: "no drift"},
		{name: "new signer", pinned: signedBy(testSigA), live: signedBy(testSigB), rules: []string{RuleSignerChanged}, action: Continue,
			reason: "only warning-level drift touches this task: signer-changed"},
		{name: "tampered", pinned: signedBy(testSigA), live: signedBy(invalid(testSigA)), rules: []string{RuleSignatureInvalid}, action: Abort,
			reason: "fail-closed: breaking drift touches this task: signature-invalid; re-negotiate against the live card"},
		{name: "unsigned", pinned: signedBy(testSigA), live: testCard(), rules: []string{RuleSignatureRemoved}, action: Continue,
			reason: "only warning-level drift touches this task: signature-removed"},
		{name: "unsigned, signed cards required", pinned: signedBy(testSigA), live: testCard(), posture: true,
			rules: []string{RuleSignatureRequired, RuleSignatureRemoved}, action: Abort,
			reason: "fail-closed: breaking drift touches this task: signature-required (the live card is not signed, and signed cards are required); re-negotiate against the live card"},
		{name: "signed now", pinned: testCard(), live: signedBy(testSigB), rules: []string{RuleSignatureAdded}, action: Continue,
			reason: "only info-level drift touches this task: signature-added"},
		{name: "re-signed by a jku key, signed cards required", pinned: signedBy(testSigA), live: signedBy(testSigB), posture: true,
			rules: []string{RuleSignatureRequired, RuleSignerChanged}, action: Abort,
			reason: `fail-closed: breaking drift touches this task: signature-required (no signature of the live card verifies with a key trusted ` +
				`for this agent (kid "b" (ES256, key tpB), verified by a jku key: a key the signature's own jku names is the signer's claim, ` +
				`not trust), and signed cards are required); re-negotiate against the live card`},
		{name: "changed after a client card in another form was pinned", pinned: withRaw(signedBy(invalid(testSigA)), `{"a":1,"signatures":[{}]}`),
			live: withRaw(signedBy(invalid(testSigA)), `{"a":2,"signatures":[{}]}`), rules: []string{RuleSignatureInvalid}, action: Abort,
			reason: "fail-closed: breaking drift touches this task: signature-invalid; re-negotiate against the live card"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var task []Finding
			if tc.posture {
				if f, ok := CheckSigned(tc.live); ok {
					task = append(task, f)
				}
			}
			fs, v := Evaluate(tc.pinned, tc.live, req, FailClosed, task...)
			if got := ruleIDs(fs); strings.Join(got, ",") != strings.Join(tc.rules, ",") {
				t.Errorf("Evaluate() rules = %v, want %v", got, tc.rules)
			}
			for _, f := range fs {
				if !f.Touches {
					t.Errorf("%s does not touch the task, want every signature finding to", f.Rule)
				}
			}
			if v.Action != tc.action || v.Reason != tc.reason {
				t.Errorf("Evaluate() verdict = %s %q, want %s %q", v.Action, v.Reason, tc.action, tc.reason)
			}
		})
	}
}

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
