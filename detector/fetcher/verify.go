package fetcher

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
)

// JKUPolicy says which jku URLs a card's signature may send the Fetcher to
// for its keys (the jku is chosen by whoever wrote the card).
type JKUPolicy string

// JKU policies.
const (
	// JKUHTTPS follows https jku URLs only (A2A §8.4.3: keys SHOULD come
	// over secure channels). The default.
	JKUHTTPS JKUPolicy = "https"
	// JKUAny follows http jku URLs too: for tests and labs on loopback.
	JKUAny JKUPolicy = "any"
	// JKUOff never follows a jku: only the operator's keys verify.
	JKUOff JKUPolicy = "off"
)

// ParseJKUPolicy reads "https", "any" or "off" ("" is JKUHTTPS).
func ParseJKUPolicy(s string) (JKUPolicy, error) {
	switch p := JKUPolicy(s); p {
	case "":
		return JKUHTTPS, nil
	case JKUHTTPS, JKUAny, JKUOff:
		return p, nil
	}
	return "", fmt.Errorf("fetcher: jku policy %q: want https, any or off", s)
}

// Defaults of SignatureOptions.
const DefaultMaxSignatureResults = 4096

// SignatureOptions configure how a Fetcher verifies the signatures of the
// cards it observes (A2A v1.0.1 §8.4; see Verify). The zero value follows
// https jku URLs and trusts no key of its own.
type SignatureOptions struct {
	// Trusted is the operator's key set (carddrift serve --jwks FILE:
	// signature.ParseJWKS), nil for none. A kid it holds is answered by it
	// alone: a signature cannot bring its own key for a kid the operator
	// vouched for.
	Trusted signature.Keys
	// TrustedURL is the URL of the operator's key set (--jwks URL), fetched
	// through this Fetcher — SSRF guard, timeouts, per-host limit — and
	// cached by Cache-Control like a jku's; http or https. "" for none.
	TrustedURL string
	// JKU says which jku URLs are followed (default JKUHTTPS).
	JKU JKUPolicy
	// JWKS configures the key set cache; its AllowHTTP is set from JKU.
	JWKS JWKSOptions
	// ResultTTL is how long the outcome of verifying one body is reused
	// (default the key set cache's MaxTTL, so that a key revoked from a set
	// stops verifying within it). An outcome for which some key set could
	// not be obtained, or held no key for a kid, is reused for the key set
	// cache's FailureTTL only.
	ResultTTL time.Duration
	// MaxResults bounds the bodies whose outcomes are kept (default
	// DefaultMaxSignatureResults; least recently used evicted first).
	MaxResults int
}

// validate reports what is wrong with o (Options.Validate calls it).
func (o SignatureOptions) validate() error {
	var errs []error
	if _, err := ParseJKUPolicy(string(o.JKU)); err != nil {
		errs = append(errs, err)
	}
	if o.TrustedURL != "" {
		if _, err := parseHTTPURL(o.TrustedURL); err != nil {
			errs = append(errs, fmt.Errorf("fetcher: TrustedURL: %w", err))
		}
	}
	if o.ResultTTL < 0 || o.MaxResults < 0 {
		errs = append(errs, fmt.Errorf("fetcher: ResultTTL %v and MaxResults %d must not be negative", o.ResultTTL, o.MaxResults))
	}
	return errors.Join(errs...)
}

// verifier verifies card signatures for a Fetcher and keeps the outcome per
// body.
type verifier struct {
	keys       signature.Keys
	jwks       *JWKS
	ttl        time.Duration
	failureTTL time.Duration
	now        func() time.Time

	mu      sync.Mutex
	max     int
	entries map[[sha256.Size]byte]*list.Element // → *verifyEntry in lru
	lru     *list.List

	verified atomic.Int64 // bodies verified (tests)
}

type verifyEntry struct {
	key     [sha256.Size]byte
	sigs    []detector.Signature
	expires time.Time
}

// newVerifier builds f's verifier (f is otherwise complete: its JWKS
// fetches through it).
func newVerifier(f *Fetcher, o SignatureOptions) (*verifier, error) {
	policy, err := ParseJKUPolicy(string(o.JKU))
	if err != nil {
		return nil, err
	}
	jo := o.JWKS
	jo.AllowHTTP = policy == JKUAny
	j, err := NewJWKS(f, jo)
	if err != nil {
		return nil, err
	}
	var trusted []signature.Keys
	if o.Trusted != nil {
		trusted = append(trusted, o.Trusted)
	}
	if o.TrustedURL != "" {
		trusted = append(trusted, j.URL(o.TrustedURL))
	}
	src := signature.Sources{}
	switch len(trusted) {
	case 0:
	case 1:
		src.Trusted = trusted[0]
	default:
		src.Trusted = firstKeys(trusted)
	}
	if policy != JKUOff {
		src.JKU = j
		src.AllowJKU = func(jku string) bool {
			l := strings.ToLower(jku)
			return strings.HasPrefix(l, "https://") || policy == JKUAny && strings.HasPrefix(l, "http://")
		}
	}
	v := &verifier{
		keys: src, jwks: j, ttl: o.ResultTTL, failureTTL: j.opts.FailureTTL, now: f.opts.Now,
		max: o.MaxResults, entries: make(map[[sha256.Size]byte]*list.Element), lru: list.New(),
	}
	if v.ttl == 0 {
		v.ttl = j.opts.MaxTTL
	}
	if v.max == 0 {
		v.max = DefaultMaxSignatureResults
	}
	return v, nil
}

// firstKeys asks each Keys in turn; the first that has keys for the kid
// answers.
type firstKeys []signature.Keys

func (ks firstKeys) Lookup(ctx context.Context, kid, jku string) ([]signature.Key, error) {
	var errs []error
	for _, k := range ks {
		keys, err := k.Lookup(ctx, kid, jku)
		if len(keys) > 0 {
			return keys, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, errors.Join(errs...)
}

// Verify checks the signatures of the card raw against the keys the Fetcher
// was configured with (Options.Signatures: the operator's key set, the key
// sets the signatures name in jku) and returns one detector.Signature per
// entry of the card's "signatures" array, in order; nil for an unsigned card
// or bytes that are not a card.
//
// The outcome is kept per body (by its SHA-256) for SignatureOptions
// ResultTTL, or for the key set cache's FailureTTL when some key set could
// not be obtained or lacked a kid: a card observed again — a 304, a fresh lease, another
// task — costs a hash, not a verification. Key sets are fetched through the
// Fetcher under ctx (each within TotalTimeout, failures remembered for
// FailureTTL); a key set that cannot be fetched makes a signature
// unverified ("keys-unavailable"), never invalid. An outcome reached after
// ctx ended is returned but not kept. Safe for concurrent use.
func (f *Fetcher) Verify(ctx context.Context, raw []byte) []detector.Signature {
	if !bytes.Contains(raw, []byte(`"signatures"`)) {
		return nil // unsigned, without a parse
	}
	v := f.verify
	key := sha256.Sum256(raw)
	if sigs, ok := v.get(key); ok {
		return sigs
	}
	v.verified.Add(1)
	results, err := signature.Verify(ctx, raw, v.keys)
	if err != nil {
		return nil // not a card: Parse refused it before anyone asks
	}
	sigs := Signatures(results)
	if ctx.Err() == nil {
		ttl := v.ttl
		for _, r := range results {
			// A key set that could not be fetched, or that lacks the kid
			// for now, may answer soon.
			if r.Reason == signature.ReasonKeysUnavailable || r.Reason == signature.ReasonNoKey {
				ttl = min(ttl, v.failureTTL)
			}
		}
		v.put(key, sigs, ttl)
	}
	return sigs
}

// JWKS returns the key set cache Verify fetches through.
func (f *Fetcher) JWKS() *JWKS { return f.verify.jwks }

func (v *verifier) get(key [sha256.Size]byte) ([]detector.Signature, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	el, ok := v.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*verifyEntry)
	if !v.now().Before(e.expires) {
		v.lru.Remove(el)
		delete(v.entries, key)
		return nil, false
	}
	v.lru.MoveToFront(el)
	return e.sigs, true
}

func (v *verifier) put(key [sha256.Size]byte, sigs []detector.Signature, ttl time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e := &verifyEntry{key: key, sigs: sigs, expires: v.now().Add(ttl)}
	if el, ok := v.entries[key]; ok {
		el.Value = e
		v.lru.MoveToFront(el)
		return
	}
	v.entries[key] = v.lru.PushFront(e)
	for v.lru.Len() > v.max {
		old := v.lru.Back()
		v.lru.Remove(old)
		delete(v.entries, old.Value.(*verifyEntry).key)
	}
}

// Signatures converts what signature.Verify found into the detector's
// values (nil for none). Detail, which is not stable, is left out.
func Signatures(results []signature.Result) []detector.Signature {
	if len(results) == 0 {
		return nil
	}
	out := make([]detector.Signature, len(results))
	for i, r := range results {
		out[i] = detector.Signature{
			KeyID: r.KeyID, Alg: r.Alg, JKU: r.JKU, Thumbprint: r.Thumbprint, Source: string(r.Source),
			Verified: r.Verified, Reason: string(r.Reason),
		}
	}
	return out
}
