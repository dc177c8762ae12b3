package signature

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Reason is the outcome of checking one signature. The values are stable
// (recorded in pins and events): add new ones, never rename.
type Reason string

const (
	ReasonVerified Reason = "verified"
	// ReasonInvalidSignature: keys were found for the kid and none verifies
	// over any form, or none can verify this alg.
	ReasonInvalidSignature Reason = "invalid-signature"
	ReasonNoKey            Reason = "no-key"
	// ReasonKeysUnavailable: the keys could not be obtained; unverified, not
	// invalid.
	ReasonKeysUnavailable Reason = "keys-unavailable"
	ReasonUnsupportedAlg  Reason = "unsupported-alg"
	// ReasonMalformed: not a JWS in the A2A shape, or "signatures" is not an
	// array.
	ReasonMalformed Reason = "malformed"
	// ReasonNotChecked: past Limits.Signatures; one Result (Index the first)
	// stands for them all.
	ReasonNotChecked Reason = "not-checked"
	// ReasonOverLimit: checking would have gone past a Limit; the detector
	// reads it as a signature that does not verify.
	ReasonOverLimit Reason = "over-limit"
)

// Reasons returns every Reason, in declaration order.
func Reasons() []Reason {
	return []Reason{ReasonVerified, ReasonInvalidSignature, ReasonNoKey, ReasonKeysUnavailable,
		ReasonUnsupportedAlg, ReasonMalformed, ReasonNotChecked, ReasonOverLimit}
}

// Result is what Verify found about one signature.
type Result struct {
	Index int // in "signatures"; -1 when it is not an array
	// KeyID, Alg, JKU and Typ are the protected header's, as far as read.
	KeyID, Alg, JKU, Typ string
	// Thumbprint is the RFC 7638 thumbprint of the key that verified, else of
	// the first found that fits the alg, else of the first found; "" for none.
	Thumbprint string
	Source     Source
	Form       Form // "" unless Verified
	Verified   bool
	Reason     Reason
	Detail     string // for people: never compare it
}

// Verify is Limits{}.Verify: every caller gets the same bounds.
func Verify(ctx context.Context, raw []byte, keys Keys) ([]Result, error) {
	return Limits{}.Verify(ctx, raw, keys)
}

// Verify checks every signature of the card raw against keys (may be nil)
// within l: one Result per entry, up to l.Signatures, then one
// ReasonNotChecked for the rest. A signature verifies when ParseJWS accepts
// it and a key Lookup returns that fits alg verifies it over one of the
// distinct canonical forms. Once ctx is done the rest are
// ReasonKeysUnavailable. It fails only with ErrNotCard.
func (l Limits) Verify(ctx context.Context, raw []byte, keys Keys) ([]Result, error) {
	return l.verify(ctx, raw, keys, time.Now)
}

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
		// One Result for the rest: a 1 MiB body holds half a million.
		out = append(out, Result{Index: v.lim.Signatures, Reason: ReasonNotChecked, Detail: fmt.Sprintf(
			"only the first %d signatures of a card are checked: entries %d to %d are not", v.lim.Signatures, v.lim.Signatures, n-1)})
	}
	return out, nil
}

// verifier checks the signatures of one card, each form computed once.
type verifier struct {
	card *jcs.Value
	keys Keys
	lim  Limits

	payloads [][]byte // the distinct payloads of Forms; nil until needed
	forms    []Form
	ops      int
	now      func() time.Time
	start    time.Time
	waited   time.Duration // spent in keys.Lookup
}

// distinct returns the distinct payloads of the card's forms, and their forms.
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

// spend accounts for one public-key operation, or returns why it may not be made.
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

// maxMisfits is how many keys unfit for the alg a Detail names.
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

// Limits bound the work Verify does for one card, whoever wrote it: without
// them 16 ES512 signatures whose kid names 100 keys, over three forms, cost
// 4,800 P-521 verifications (17 s of CPU); a real card needs at most six. A
// signature a limit stops is ReasonOverLimit (ReasonNotChecked past
// Signatures). A zero field takes its default; there is no "unlimited".
type Limits struct {
	// Signatures is how many entries are checked; one ReasonNotChecked
	// Result stands for the rest.
	Signatures int
	// KeysPerSignature is how many keys fitting the alg a kid may name (two
	// while a key is replaced under its old kid).
	KeysPerSignature int
	// Forms is how many distinct canonical forms are tried per key (at most 3).
	Forms int
	// Operations is how many public-key operations the whole card may cost:
	// the bound that holds its cost (an ES512 check is about 3.5 ms).
	Operations int
	// Time is how long checking may take, key lookups (I/O, bounded by whoever
	// does them) excluded: a backstop for what Operations does not count.
	Time time.Duration
}

// Defaults of Limits.
const (
	MaxSignatures           = 16
	DefaultKeysPerSignature = 2
	DefaultOperations       = 8 // a rotation's two signatures over three forms, and two to spare
	DefaultTime             = 2 * time.Second
)

// DefaultLimits returns every field at its default.
func DefaultLimits() Limits {
	return Limits{
		Signatures: MaxSignatures, KeysPerSignature: DefaultKeysPerSignature,
		Forms: len(Forms()), Operations: DefaultOperations, Time: DefaultTime,
	}
}

// withDefaults sets every zero or negative field to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		Signatures:       cmp.Or(max(l.Signatures, 0), d.Signatures),
		KeysPerSignature: cmp.Or(max(l.KeysPerSignature, 0), d.KeysPerSignature),
		Forms:            cmp.Or(min(max(l.Forms, 0), d.Forms), d.Forms),
		Operations:       cmp.Or(max(l.Operations, 0), d.Operations),
		Time:             cmp.Or(max(l.Time, 0), d.Time),
	}
}

// operations counts every public-key operation, for tests that check the
// budget whatever the bookkeeping says.
var operations atomic.Int64
