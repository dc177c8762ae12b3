package detector

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The signature rules compare who signed the pinned card with who signs the
// live one; signature bytes are never compared (ECDSA differs at every
// signing).

var (
	checkSignatureAdded   = turned(true, RuleSignatureAdded, Info, "/signatures", signed, signerOf)
	checkSignatureRemoved = turned(false, RuleSignatureRemoved, Warning, "/signatures", signed, signerOf)
)

func checkSignatureInvalid(pinned, live *Card) []Finding {
	if f, ok := invalidSignature(pinned, live); ok {
		return []Finding{f}
	}
	return nil
}

// checkSignerChanged reports another signer (signerChanged), unless a
// signature-invalid finding stands in for it.
func checkSignerChanged(pinned, live *Card) []Finding {
	if _, ok := invalidSignature(pinned, live); ok {
		return nil
	}
	if f, ok := signerChanged(pinned, live); ok {
		return []Finding{f}
	}
	return nil
}

// vouched reports that a live signature verifies with a key that verified
// the pinned card, whatever else the card carries (a key rotation).
func vouched(pinned, live *Card) bool {
	return slices.ContainsFunc(live.Signatures, func(l Signature) bool {
		_, ok := pinnedSignature(pinned, l.Thumbprint, true)
		return ok && l.Verified
	})
}

func pinnedSignature(pinned *Card, thumbprint string, verified bool) (Signature, bool) {
	if pinned == nil || thumbprint == "" {
		return Signature{}, false
	}
	for _, p := range pinned.Signatures {
		if p.Thumbprint == thumbprint && (p.Verified || !verified) {
			return p, true
		}
	}
	return Signature{}, false
}

// invalidSignature returns the signature-invalid finding of a live card one
// of whose signatures fails against a key that vouches for it. In order:
//
//   - a live signature verifies with a key that verified the pinned card
//     (vouched): nothing to report;
//   - a live signature fails against a key that verified the pinned card:
//     signature-invalid;
//   - a live signature verifies with a key trusted for the agent: that key
//     vouches for the card, nothing to report;
//   - a live signature fails against the key the pinned card's signature
//     was checked with (the pin never verified: a client's card in another
//     form than the one signed), or against a key trusted for the agent:
//     signature-invalid, unless the pinned card is the same content and
//     failed against that key too (nothing changed).
//
// A signature whose key could not be found or fetched is never invalid: a
// key set outage is not a forgery.
func invalidSignature(pinned, live *Card) (Finding, bool) {
	if live == nil || len(live.Signatures) == 0 || vouched(pinned, live) {
		return Finding{}, false
	}
	for i, l := range live.Signatures {
		if p, ok := pinnedSignature(pinned, l.Thumbprint, true); ok && failedSignature(l.Reason) {
			return newFinding(RuleSignatureInvalid, "/pinned", Breaking, signaturePointer(i), p, l, "signer", describeKey(l)), true
		}
	}
	if slices.ContainsFunc(live.Signatures, Signature.Trusted) {
		return Finding{}, false
	}
	for i, l := range live.Signatures {
		if !failedSignature(l.Reason) || l.Thumbprint == "" {
			continue
		}
		p, byPinnedKey := pinnedSignature(pinned, l.Thumbprint, false)
		if !byPinnedKey && l.Source != SourceTrusted {
			continue
		}
		if byPinnedKey && failedSignature(p.Reason) && (sameContent(pinned, live) || p.Reason == SignatureOverLimit && l.Reason == SignatureOverLimit) {
			// Nothing changed; or a limit stopped both checks, which says
			// nothing about the content (the pin was as hostile).
			continue
		}
		f := Finding{Rule: RuleSignatureInvalid, Severity: Breaking, Path: signaturePointer(i), Before: nil, After: l}
		if byPinnedKey {
			f.Before = p
			f.Message = render(RuleSignatureInvalid+"/pinned-signer", "signer", describeKey(l))
		} else {
			if pinned != nil {
				if s, _, ok := Signer(pinned.Signatures); ok {
					f.Before = s
				}
			}
			f.Message = render(RuleSignatureInvalid+"/trusted", "signer", describeKey(l))
		}
		return f, true
	}
	return Finding{}, false
}

// sameContent reports that two cards' served bytes have one digest.
func sameContent(a, b *Card) bool {
	if a == b {
		return a != nil
	}
	if a == nil || b == nil || len(a.Raw) == 0 || len(b.Raw) == 0 {
		return false
	}
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	da, err := Digest(a.Raw)
	if err != nil {
		return false
	}
	db, err := Digest(b.Raw)
	return err == nil && da == db
}

// signerChanged returns the signer-changed finding of two verified cards
// whose Signers differ (sameSigner) while the pinned signer does not vouch
// for the live card too.
func signerChanged(pinned, live *Card) (Finding, bool) {
	if !signed(pinned) || !signed(live) || len(pinned.Signatures) == 0 || len(live.Signatures) == 0 || vouched(pinned, live) {
		return Finding{}, false
	}
	p, _, _ := Signer(pinned.Signatures)
	l, i, _ := Signer(live.Signatures)
	if sameSigner(p, l) {
		return Finding{}, false
	}
	return newFinding(RuleSignerChanged, "", Warning, signaturePointer(i), p, l,
		"before", describeSigner(p), "after", describeSigner(l)), true
}

// signerOf is the {signer} of a message about c's signatures.
func signerOf(c *Card) []string {
	s, _, ok := Signer(c.Signatures)
	if !ok {
		return []string{"signer", "signatures not checked"}
	}
	return []string{"signer", describeSigner(s)}
}

// CheckSigned is the posture for signed fleets (--require-signed-cards): a
// signature-required finding unless a live signature is Trusted.
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
	if slices.ContainsFunc(live.Signatures, Signature.Trusted) {
		return Finding{}, false
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
	variant := "/unverified"
	if s.Verified {
		variant = "/untrusted"
	}
	f.Message = render(RuleSignatureRequired+variant, "signer", describeSigner(s))
	return f, true
}

// failedSignature: invalid, or over a limit (a card that costs more to verify
// than any real card is not taken on trust).
func failedSignature(reason string) bool {
	return reason == SignatureInvalid || reason == SignatureOverLimit
}

// Signature is what verifying one entry of a card's "signatures" found: a
// signature.Result as the detector reads it.
type Signature struct {
	KeyID string `json:"kid"`
	Alg   string `json:"alg"`
	JKU   string `json:"jku,omitempty"`
	// Thumbprint is the RFC 7638 thumbprint of the key that verified the
	// signature, else of the key found for its kid; "" when none was found.
	Thumbprint string `json:"thumbprint,omitempty"`
	Source     string `json:"source,omitempty"` // SourceTrusted or SourceJKU
	Verified   bool   `json:"verified"`
	// Reason is one of package detector/signature's Reason values.
	Reason string `json:"reason"`
}

// Outcomes of a signature check the detector tells apart from the rest
// ("unverified"), and the sources of a signature's key.
const (
	SignatureVerified = "verified"
	SignatureInvalid  = "invalid-signature"
	// SignatureOverLimit: a verification limit stopped the check.
	SignatureOverLimit = "over-limit"

	SourceTrusted = "trusted" // a key the operator trusts for the card's agent
	SourceJKU     = "jku"     // from the signature's own jku: the signer's claim
)

// Trusted reports a signature that verifies with a key the operator trusts
// for the card's agent: the only kind --require-signed-cards accepts.
func (s Signature) Trusted() bool { return s.Verified && s.Source == SourceTrusted }

// Signer returns the signature that speaks for the card: the first trusted,
// else the first verified, else the first.
func Signer(sigs []Signature) (s Signature, index int, ok bool) {
	for i, s := range sigs {
		if s.Trusted() {
			return s, i, true
		}
	}
	for i, s := range sigs {
		if s.Verified {
			return s, i, true
		}
	}
	if len(sigs) == 0 {
		return Signature{}, 0, false
	}
	return sigs[0], 0, true
}

func signed(c *Card) bool { return len(c.Signatures) > 0 || c.HasSignatures }

// sameSigner: the same thumbprint when both are known, else the same kid,
// both looked up or neither (a key set outage is not a new signer).
func sameSigner(a, b Signature) bool {
	if a.Thumbprint != "" && b.Thumbprint != "" {
		return a.Thumbprint == b.Thumbprint
	}
	return a.KeyID == b.KeyID && lookedUp(a) == lookedUp(b)
}

// lookedUp reports a signature whose kid was looked up among the keys.
func lookedUp(s Signature) bool {
	switch s.Reason {
	case "unsupported-alg", "malformed", "not-checked":
		return false
	}
	return true
}

// describeKey names a signature's kid, alg and thumbprint for a message.
func describeKey(s Signature) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kid %s", quote(s.KeyID))
	if s.Alg != "" {
		fmt.Fprintf(&b, " (%s", s.Alg)
		if s.Thumbprint != "" {
			fmt.Fprintf(&b, ", key %s", s.Thumbprint)
		}
		b.WriteByte(')')
	}
	return b.String()
}

// describeSigner is describeKey and what verifying it found.
func describeSigner(s Signature) string {
	var b strings.Builder
	b.WriteString(describeKey(s))
	if s.Verified {
		b.WriteString(", verified")
		if s.Source != "" {
			fmt.Fprintf(&b, " by a %s key", s.Source)
		}
	} else {
		fmt.Fprintf(&b, ", unverified: %s", s.Reason)
	}
	return b.String()
}

func signaturePointer(i int) string { return pointer("signatures", fmt.Sprint(i)) }
