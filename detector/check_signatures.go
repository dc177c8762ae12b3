package detector

// The signature rules compare who signed the pinned card with who signs the
// live one (Card.Signatures, set by whoever verified them; see Signature).
// Signatures never change a card's digest, so these are the only findings
// between two bodies with the same digest. Signature bytes are never
// compared: ECDSA signatures differ every time a card is signed, and a new
// signature by the same key over the same content is no finding. Every
// finding touches every task on the agent: a card's signer vouches for all
// of it.

// checkSignatureAdded reports a card that is signed now and was not.
func checkSignatureAdded(pinned, live *Card) []Finding {
	if signed(pinned) || !signed(live) {
		return nil
	}
	return []Finding{{
		Rule: RuleSignatureAdded, Severity: Info, Path: "/signatures", Before: false, After: true,
		Message: render(RuleSignatureAdded, "signer", signerOf(live)),
	}}
}

// checkSignatureRemoved reports a card that is no longer signed: whoever
// vouched for the pinned card no longer vouches for the live one.
func checkSignatureRemoved(pinned, live *Card) []Finding {
	if !signed(pinned) || signed(live) {
		return nil
	}
	return []Finding{{
		Rule: RuleSignatureRemoved, Severity: Warning, Path: "/signatures", Before: true, After: false,
		Message: render(RuleSignatureRemoved, "signer", signerOf(pinned)),
	}}
}

// checkSignatureInvalid reports a live card whose signature fails against a
// key that verified the pinned card: the card was changed after it was
// signed, or someone else wrote the signature under that key's name.
func checkSignatureInvalid(pinned, live *Card) []Finding {
	return signerFinding(pinned, live, RuleSignatureInvalid)
}

// checkSignerChanged reports a live card signed by another key than the
// pinned card (another thumbprint; another kid when a key could not be
// found), and not by the pinned card's key as well: it may not be the same
// vendor any more.
func checkSignerChanged(pinned, live *Card) []Finding {
	return signerFinding(pinned, live, RuleSignerChanged)
}

// signerFinding returns compareSigners' finding when it is of rule.
func signerFinding(pinned, live *Card, rule string) []Finding {
	f, ok := compareSigners(pinned, live)
	if !ok || f.Rule != rule {
		return nil
	}
	return []Finding{f}
}

// compareSigners decides between signature-invalid and signer-changed for
// two signed cards whose signatures were verified, and returns that finding.
// In order:
//
//   - a live signature verifies with a key that verified the pinned card:
//     the pinned signer still vouches for the card, nothing to report (a
//     co-signer added during a key rotation included);
//   - a live signature fails (invalid-signature) against a key that
//     verified the pinned card: signature-invalid;
//   - the signer of the live card (Signer) is not the pinned card's
//     (sameSigner): signer-changed.
//
// A signature that could not be checked (keys unavailable) with the pinned
// signer's kid is no change: a key set outage is not a new vendor.
func compareSigners(pinned, live *Card) (Finding, bool) {
	if !signed(pinned) || !signed(live) || len(pinned.Signatures) == 0 || len(live.Signatures) == 0 {
		return Finding{}, false
	}
	verifiedPin := func(thumbprint string) (Signature, bool) {
		for _, p := range pinned.Signatures {
			if p.Verified && thumbprint != "" && p.Thumbprint == thumbprint {
				return p, true
			}
		}
		return Signature{}, false
	}
	for _, l := range live.Signatures {
		if _, ok := verifiedPin(l.Thumbprint); ok && l.Verified {
			return Finding{}, false
		}
	}
	for i, l := range live.Signatures {
		if p, ok := verifiedPin(l.Thumbprint); ok && failedSignature(l.Reason) {
			return Finding{
				Rule: RuleSignatureInvalid, Severity: Breaking, Path: signaturePointer(i), Before: p, After: l,
				Message: render(RuleSignatureInvalid, "signer", describeKey(l)),
			}, true
		}
	}
	p, _, _ := Signer(pinned.Signatures)
	l, i, _ := Signer(live.Signatures)
	if sameSigner(p, l) {
		return Finding{}, false
	}
	return Finding{
		Rule: RuleSignerChanged, Severity: Warning, Path: signaturePointer(i), Before: p, After: l,
		Message: render(RuleSignerChanged, "before", describeSigner(p), "after", describeSigner(l)),
	}, true
}

// signerOf describes who signed c, for a message.
func signerOf(c *Card) string {
	s, _, ok := Signer(c.Signatures)
	if !ok {
		return "signatures not checked"
	}
	return describeSigner(s)
}

// CheckSigned is the posture for signed fleets (carddrift serve
// --require-signed-cards): it returns a signature-required finding
// (breaking, touching every task) unless a signature of the live card
// verifies. The message says why: the card is unsigned, its signature is
// invalid, or none could be verified (no key, keys unavailable, an
// algorithm or entry carddrift does not accept, or not checked at all).
// Whether a key is trusted or comes from a jku is not judged here; an
// operator who trusts only its own keys turns jku off.
func CheckSigned(live *Card) (Finding, bool) {
	if live == nil {
		live = &Card{}
	}
	f := Finding{Rule: RuleSignatureRequired, Severity: Breaking, Path: "/signatures", Before: nil, After: false}
	switch {
	case !signed(live):
		f.Path = ""
		f.Message = render(RuleSignatureRequired + "/unsigned")
		return f, true
	case len(live.Signatures) == 0:
		f.Message = render(RuleSignatureRequired + "/unchecked")
		return f, true
	}
	for _, s := range live.Signatures {
		if s.Verified {
			return Finding{}, false
		}
	}
	for i, s := range live.Signatures {
		if failedSignature(s.Reason) {
			f.Path = signaturePointer(i)
			f.Message = render(RuleSignatureRequired+"/invalid", "signer", describeKey(s))
			return f, true
		}
	}
	s, i, _ := Signer(live.Signatures)
	f.Path = signaturePointer(i)
	f.Message = render(RuleSignatureRequired+"/unverified", "signer", describeSigner(s))
	return f, true
}

// SignatureOverLimit is package detector/signature's ReasonOverLimit: a
// verification limit (keys under one kid, canonical forms, the card's budget
// of public-key operations or time) stopped the signature's check.
const SignatureOverLimit = "over-limit"

// failedSignature reports an outcome the signature rules read as a
// signature that does not verify: invalid-signature, or over-limit — a card
// that costs more to verify than any real card is not taken on trust
// (signature-invalid against the pinned signer's key, signature-required's
// "does not verify" under --require-signed-cards).
func failedSignature(reason string) bool {
	return reason == SignatureInvalid || reason == SignatureOverLimit
}
