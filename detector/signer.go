package detector

import (
	"fmt"
	"strings"
)

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
