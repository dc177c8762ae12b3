package detector

import (
	"fmt"
	"strings"
)

// Signature is what verifying one entry of a card's "signatures" array found
// (A2A v1.0.1 §8.4). The detector does no I/O: whoever verified the card
// (package detector/signature does the verifying) sets Card.Signatures.
type Signature struct {
	// KeyID and Alg are the protected header's kid and alg; JKU its jku, if
	// any.
	KeyID string `json:"kid"`
	Alg   string `json:"alg"`
	JKU   string `json:"jku,omitempty"`
	// Thumbprint is the RFC 7638 SHA-256 thumbprint (base64url) of the key
	// that verified the signature, or of the key found for its kid when none
	// did; "" when no key was found. It identifies the signer whatever kid
	// the key is published under.
	Thumbprint string `json:"thumbprint,omitempty"`
	// Source is where that key came from: "trusted" (SourceTrusted: a key
	// the operator trusts for this agent, --jwks or --trust) or "jku"
	// (SourceJKU: the key set the signature names, the signer's own claim).
	Source string `json:"source,omitempty"`
	// Verified reports that the signature verifies against that key over
	// the card's canonical form.
	Verified bool `json:"verified"`
	// Reason is the outcome, one of package detector/signature's Reason
	// values: "verified", "invalid-signature", "no-key", "keys-unavailable",
	// "unsupported-alg", "malformed", "not-checked", "over-limit".
	Reason string `json:"reason"`
}

// Outcomes of a signature check (Signature.Reason) the detector tells
// apart; the others all mean "unverified".
const (
	SignatureVerified = "verified"
	SignatureInvalid  = "invalid-signature"
)

// Sources of a signature's key (Signature.Source).
const (
	// SourceTrusted: a key the operator trusts for the card's agent.
	SourceTrusted = "trusted"
	// SourceJKU: a key from the key set the signature itself names (jku):
	// it proves who controls that URL, not who the operator trusts.
	SourceJKU = "jku"
)

// Trusted reports a signature that verifies with a key the operator trusts
// for the card's agent: the only kind that vouches for a card under
// carddrift serve --require-signed-cards.
func (s Signature) Trusted() bool { return s.Verified && s.Source == SourceTrusted }

// Signer returns the signature that speaks for the card: the first that
// verified with a trusted key, else the first that verified, else the
// first. ok is false when there is none.
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

// signed reports that c carries signatures: verified ones when whoever
// built c set Card.Signatures, else a non-empty served "signatures" array.
func signed(c *Card) bool { return len(c.Signatures) > 0 || c.HasSignatures }

// sameSigner reports that two signatures name the same signer: the same key
// thumbprint when both are known, else the same kid, both looked up among the
// keys or neither (so a key set that could not be fetched, or a refused entry,
// is not mistaken for a new signer).
func sameSigner(a, b Signature) bool {
	if a.Thumbprint != "" && b.Thumbprint != "" {
		return a.Thumbprint == b.Thumbprint
	}
	return a.KeyID == b.KeyID && lookedUp(a) == lookedUp(b)
}

// lookedUp reports a signature whose kid was looked up among the keys:
// not one refused before that (package detector/signature's
// "unsupported-alg", "malformed", "not-checked").
func lookedUp(s Signature) bool {
	switch s.Reason {
	case "unsupported-alg", "malformed", "not-checked":
		return false
	}
	return true
}

// describeKey names the key of a signature in a message: kid, alg and
// thumbprint.
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

// describeSigner is a signature as a message names it: its key and what
// verifying it found.
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

// signaturePointer points at the i-th signature entry.
func signaturePointer(i int) string {
	return pointer("signatures", fmt.Sprint(i))
}
