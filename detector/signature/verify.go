package signature

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Reason is the outcome of checking one signature. The values are stable
// (they may be recorded in pins and events): add new ones, never rename.
type Reason string

const (
	// ReasonVerified: the signature verifies against a key found for its kid
	// over one of the card's canonical forms (Result.Form says which).
	ReasonVerified Reason = "verified"
	// ReasonInvalidSignature: keys were found for the kid and none verifies
	// the signature over any canonical form — the card changed after
	// signing, or was signed by another key under the same kid — or none of
	// them can verify this alg (an RSA key for ES256, say).
	ReasonInvalidSignature Reason = "invalid-signature"
	// ReasonNoKey: the key sources answered, and hold no key with this kid.
	ReasonNoKey Reason = "no-key"
	// ReasonKeysUnavailable: the keys could not be obtained (the jku or the
	// trusted set could not be fetched or is not a key set, or there is no
	// key source at all). The signature is unverified, not invalid.
	ReasonKeysUnavailable Reason = "keys-unavailable"
	// ReasonUnsupportedAlg: the entry is well-formed but its alg is not one
	// of Algorithms ("none", HMAC, or unknown).
	ReasonUnsupportedAlg Reason = "unsupported-alg"
	// ReasonMalformed: the entry is not a JWS in the A2A shape (see
	// ErrMalformed), or "signatures" itself is not an array.
	ReasonMalformed Reason = "malformed"
	// ReasonNotChecked: the card has more than MaxSignatures signatures; the
	// ones past the limit are parsed but not checked (no key lookup).
	ReasonNotChecked Reason = "not-checked"
)

// Reasons returns every Reason, in declaration order (for schemas and
// tests).
func Reasons() []Reason {
	return []Reason{ReasonVerified, ReasonInvalidSignature, ReasonNoKey, ReasonKeysUnavailable,
		ReasonUnsupportedAlg, ReasonMalformed, ReasonNotChecked}
}

// MaxSignatures is how many signatures of one card Verify checks: each may
// cost a key set fetch. Real cards carry one, or two during a key rotation.
const MaxSignatures = 16

// Result is what Verify found about one signature.
type Result struct {
	// Index is the entry's position in "signatures" (-1 when "signatures"
	// itself is not an array).
	Index int
	// KeyID, Alg, JKU and Typ are the protected header's kid, alg, jku and
	// typ, as far as the entry could be read.
	KeyID, Alg, JKU, Typ string
	// Thumbprint is the RFC 7638 SHA-256 thumbprint (base64url) of the key
	// that verified the signature; when none did, of the first key found for
	// the kid that can verify this alg, else of the first key found; "" when
	// no key was found. Source is where that key came from.
	Thumbprint string
	Source     Source
	// Form is the canonical form the signature covers; "" unless Verified.
	Form Form
	// Verified is Reason == ReasonVerified.
	Verified bool
	Reason   Reason
	// Detail says why, for people (not stable: never compare it).
	Detail string
}

// Verify checks every signature of the agent card raw against keys, and
// returns one Result per entry of its "signatures" array, in order. A card
// without signatures (no member, null, or an empty array) yields none.
//
// A signature verifies when its protected header is well-formed (alg, kid
// and typ set; see ParseJWS), keys.Lookup(kid, jku) returns a key that fits
// alg, and the signature checks out with go-jose over one of the card's
// canonical forms (Forms, tried in that order) as RFC 7515 detached payload:
// the signing input is BASE64URL(protected) "." BASE64URL(canonical form).
//
// Verify fails only when raw is not a card: an error wrapping ErrNotCard
// (and the *jcs.SyntaxError). Everything wrong with a signature is in its
// Result. Verify does no I/O of its own: keys does any, under ctx, once per
// signature checked (at most MaxSignatures). keys may be nil: every
// well-formed signature is then ReasonKeysUnavailable. Verify is safe for
// concurrent use if keys is.
func Verify(ctx context.Context, raw []byte, keys Keys) ([]Result, error) {
	card, err := jcs.ParseObject(raw, jcs.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCard, err)
	}
	sigs, ok := card.Get(signaturesKey)
	if !ok || sigs.Kind == jcs.Null || sigs.Kind == jcs.Array && len(sigs.Elems) == 0 {
		return nil, nil
	}
	if sigs.Kind != jcs.Array {
		return []Result{{Index: -1, Reason: ReasonMalformed,
			Detail: fmt.Sprintf("signatures is a JSON %s, not an array", sigs.Kind)}}, nil
	}
	forms := Forms()
	v := verifier{card: &card, keys: keys, forms: forms, payloads: make([][]byte, len(forms))}
	out := make([]Result, len(sigs.Elems))
	for i := range sigs.Elems {
		out[i] = v.one(ctx, i, &sigs.Elems[i])
	}
	return out, nil
}

// verifier checks the signatures of one card, computing each canonical form
// at most once.
type verifier struct {
	card     *jcs.Value
	keys     Keys
	forms    []Form
	payloads [][]byte // by index in forms; nil until computed
}

// payload returns the payload of forms[i], and whether it differs from the
// payloads of every earlier form (an identical one need not be checked
// twice: for a card already in normal form all three are the same bytes).
func (v *verifier) payload(i int) ([]byte, bool) {
	for k := 0; k <= i; k++ {
		if v.payloads[k] == nil {
			v.payloads[k] = AppendCanonical(nil, v.card, v.forms[k])
		}
	}
	for k := range i {
		if bytes.Equal(v.payloads[k], v.payloads[i]) {
			return v.payloads[i], false
		}
	}
	return v.payloads[i], true
}

func (v *verifier) one(ctx context.Context, i int, entry *jcs.Value) Result {
	r := Result{Index: i}
	j, err := parseJWS(entry)
	if j != nil {
		r.KeyID, r.Alg, r.JKU, r.Typ = j.KeyID, j.Alg, j.JKU, j.Typ
	}
	switch {
	case errors.Is(err, ErrUnsupportedAlg):
		return r.fail(ReasonUnsupportedAlg, err.Error())
	case err != nil:
		return r.fail(ReasonMalformed, err.Error())
	case i >= MaxSignatures:
		return r.fail(ReasonNotChecked, fmt.Sprintf("only the first %d signatures of a card are checked", MaxSignatures))
	case v.keys == nil:
		return r.fail(ReasonKeysUnavailable, "no key source configured")
	}
	keys, err := v.keys.Lookup(ctx, j.KeyID, j.JKU)
	if len(keys) == 0 {
		if err != nil {
			return r.fail(ReasonKeysUnavailable, err.Error())
		}
		return r.fail(ReasonNoKey, fmt.Sprintf("no key with kid %q", j.KeyID))
	}
	r.Thumbprint, r.Source = keys[0].Thumbprint, keys[0].Source
	var misfits []string
	usable := 0
	for _, k := range keys {
		if err := k.fits(j.Alg); err != nil {
			misfits = append(misfits, err.Error())
			continue
		}
		if usable == 0 {
			r.Thumbprint, r.Source = k.Thumbprint, k.Source
		}
		usable++
		for i, f := range v.forms {
			p, distinct := v.payload(i)
			if distinct && j.verify(p, k.JWK.Key) {
				r.Thumbprint, r.Source, r.Form = k.Thumbprint, k.Source, f
				r.Verified, r.Reason = true, ReasonVerified
				return r
			}
		}
	}
	if usable == 0 {
		return r.fail(ReasonInvalidSignature, strings.Join(misfits, "; "))
	}
	return r.fail(ReasonInvalidSignature, fmt.Sprintf(
		"the signature does not verify against %d key(s) with kid %q over any canonical form", usable, j.KeyID))
}

func (r Result) fail(reason Reason, detail string) Result {
	r.Reason, r.Detail = reason, detail
	return r
}
