package signature

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// ReasonNotChecked: the card has more signatures than Limits.Signatures
	// (MaxSignatures by default); the ones past the limit are neither parsed
	// nor checked, and one Result stands for them all (it has only Index,
	// the first of them, Reason and Detail).
	ReasonNotChecked Reason = "not-checked"
	// ReasonOverLimit: checking the signature would have gone past one of
	// the verifier's Limits — more keys under its kid than
	// Limits.KeysPerSignature, more canonical forms than Limits.Forms, the
	// card's budget of public-key operations (Limits.Operations) or of time
	// (Limits.Time) spent — so it was not checked to the end. No real card
	// comes near the limits: the detector reads this outcome as a signature
	// that does not verify (signature-invalid), never as a verified one.
	ReasonOverLimit Reason = "over-limit"
)

// Reasons returns every Reason, in declaration order (for schemas and
// tests).
func Reasons() []Reason {
	return []Reason{ReasonVerified, ReasonInvalidSignature, ReasonNoKey, ReasonKeysUnavailable,
		ReasonUnsupportedAlg, ReasonMalformed, ReasonNotChecked, ReasonOverLimit}
}

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

// Verify checks every signature of the agent card raw against keys within
// the default limits (DefaultLimits): it is Limits{}.Verify. Every caller —
// the fetcher for live cards, the worker for a client's card, carddrift pin
// — gets the same bounds.
func Verify(ctx context.Context, raw []byte, keys Keys) ([]Result, error) {
	return Limits{}.Verify(ctx, raw, keys)
}

// Verify checks every signature of the agent card raw against keys within l
// (a zero field at its default) and returns one Result per entry of its
// "signatures" array, in order, up to l.Signatures, then one ReasonNotChecked
// Result for the rest; none for a card without signatures. A signature
// verifies when its protected header is well-formed (ParseJWS), keys.Lookup
// returns a key that fits alg, and it checks out over one of the card's
// canonical forms (Forms, each distinct payload once). Once ctx is done, the
// signatures not yet decided are ReasonKeysUnavailable. Verify fails only
// when raw is not a card (ErrNotCard); keys may be nil.
func (l Limits) Verify(ctx context.Context, raw []byte, keys Keys) ([]Result, error) {
	return l.verify(ctx, raw, keys, time.Now)
}

// verify is Verify on the clock now (tests pass their own).
func (l Limits) verify(ctx context.Context, raw []byte, keys Keys, now func() time.Time) ([]Result, error) {
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
	v := verifier{card: &card, keys: keys, lim: l.withDefaults(), now: now, start: now()}
	n := len(sigs.Elems)
	out := make([]Result, 0, min(n, v.lim.Signatures+1))
	for i := range min(n, v.lim.Signatures) {
		out = append(out, v.one(ctx, i, &sigs.Elems[i]))
	}
	if n > v.lim.Signatures {
		// One Result for every entry past the limit: a 1 MiB body holds
		// half a million entries.
		out = append(out, Result{Index: v.lim.Signatures, Reason: ReasonNotChecked, Detail: fmt.Sprintf(
			"only the first %d signatures of a card are checked: entries %d to %d are not", v.lim.Signatures, v.lim.Signatures, n-1)})
	}
	return out, nil
}

// verifier checks the signatures of one card within its limits, computing
// each canonical form at most once.
type verifier struct {
	card *jcs.Value
	keys Keys
	lim  Limits

	payloads [][]byte // the distinct payloads of Forms, in order; nil until needed
	forms    []Form   // the form of each payload
	ops      int      // public-key operations made
	now      func() time.Time
	start    time.Time
	waited   time.Duration // spent in keys.Lookup
}

// distinct returns the distinct payloads of the card's canonical forms, in
// the order of Forms, and their forms: an identical one need not be checked
// twice (for a card already in normal form all three are the same bytes).
func (v *verifier) distinct() ([][]byte, []Form) {
	if v.payloads == nil {
	next:
		for _, f := range Forms() {
			p := AppendCanonical(nil, v.card, f)
			for _, q := range v.payloads {
				if bytes.Equal(p, q) {
					continue next
				}
			}
			v.payloads, v.forms = append(v.payloads, p), append(v.forms, f)
		}
	}
	return v.payloads, v.forms
}

// spend accounts for one public-key operation about to be made. When none
// may be made it returns false and the outcome of the signature that needed
// it.
func (v *verifier) spend(ctx context.Context) (ok bool, reason Reason, detail string) {
	if err := ctx.Err(); err != nil {
		return false, ReasonKeysUnavailable, "verification stopped: " + err.Error()
	}
	if v.ops >= v.lim.Operations {
		return false, ReasonOverLimit, fmt.Sprintf("the card's budget of %d public-key operations is spent", v.lim.Operations)
	}
	if spent := v.now().Sub(v.start) - v.waited; spent > v.lim.Time {
		return false, ReasonOverLimit, fmt.Sprintf("checking the card has taken %v, limit %v", spent.Round(time.Millisecond), v.lim.Time)
	}
	v.ops++
	return true, "", ""
}

// maxMisfits is how many keys that cannot verify a signature's alg its
// Detail names.
const maxMisfits = 4

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
	case v.keys == nil:
		return r.fail(ReasonKeysUnavailable, "no key source configured")
	}
	if err := ctx.Err(); err != nil {
		return r.fail(ReasonKeysUnavailable, "verification stopped: "+err.Error())
	}
	asked := v.now()
	keys, err := v.keys.Lookup(ctx, j.KeyID, j.JKU)
	v.waited += v.now().Sub(asked)
	if len(keys) == 0 {
		if err != nil {
			return r.fail(ReasonKeysUnavailable, err.Error())
		}
		return r.fail(ReasonNoKey, fmt.Sprintf("no key with kid %q", j.KeyID))
	}
	r.Thumbprint, r.Source = keys[0].Thumbprint, keys[0].Source
	var misfits []string
	var usable []Key
	for _, k := range keys {
		if err := k.fits(j.Alg); err != nil {
			if len(misfits) < maxMisfits {
				misfits = append(misfits, err.Error())
			}
			continue
		}
		usable = append(usable, k)
	}
	if len(usable) == 0 {
		if n := len(keys) - len(misfits); n > 0 {
			misfits = append(misfits, fmt.Sprintf("and %d more", n))
		}
		return r.fail(ReasonInvalidSignature, strings.Join(misfits, "; "))
	}
	r.Thumbprint, r.Source = usable[0].Thumbprint, usable[0].Source
	if len(usable) > v.lim.KeysPerSignature {
		return r.fail(ReasonOverLimit, fmt.Sprintf("kid %q names %d keys that fit %s, limit %d per signature",
			j.KeyID, len(usable), j.Alg, v.lim.KeysPerSignature))
	}
	payloads, forms := v.distinct()
	tried := min(len(payloads), v.lim.Forms)
	for _, k := range usable {
		for f, p := range payloads[:tried] {
			if ok, reason, detail := v.spend(ctx); !ok {
				return r.fail(reason, detail)
			}
			if j.verify(p, k.JWK.Key) {
				r.Thumbprint, r.Source, r.Form = k.Thumbprint, k.Source, forms[f]
				r.Verified, r.Reason = true, ReasonVerified
				return r
			}
		}
	}
	if tried < len(payloads) {
		return r.fail(ReasonOverLimit, fmt.Sprintf(
			"the signature does not verify over the first %d of the card's %d distinct canonical forms (limit %d)",
			tried, len(payloads), v.lim.Forms))
	}
	return r.fail(ReasonInvalidSignature, fmt.Sprintf(
		"the signature does not verify against %d key(s) with kid %q over any canonical form", len(usable), j.KeyID))
}

func (r Result) fail(reason Reason, detail string) Result {
	r.Reason, r.Detail = reason, detail
	return r
}
