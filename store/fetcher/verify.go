package fetcher

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
)

// JKUPolicy says which jku URLs a card's signature may send the Fetcher to
// for its keys (the jku is chosen by whoever wrote the card).
type JKUPolicy string

// JKU policies: follow https jku URLs only (the default; A2A §8.4.3: keys
// SHOULD come over secure channels), http ones too (tests and labs on
// loopback), or none (only the operator's keys verify).
const (
	JKUHTTPS JKUPolicy = "https"
	JKUAny   JKUPolicy = "any"
	JKUOff   JKUPolicy = "off"
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

// Defaults of SignatureOptions.MaxResults and CacheBytes: with the
// Fetcher's card cache (DefaultCacheBytes) and the worker's, the bytes
// leave most of a 512 MiB pod to the rest.
const (
	DefaultMaxSignatureResults = 4096
	DefaultSignatureCacheBytes = 32 << 20
)

// SignatureOptions configure how a Fetcher verifies the signatures of the
// cards it observes (A2A v1.0.1 §8.4; see VerifyAt; trust is scoped, see
// trust.go). The zero value follows https jku URLs and trusts no key of its
// own. A kid that a set trusted for the agent holds is answered by those
// sets alone (source "trusted"): a signature cannot bring its own key for a
// kid the operator vouched for.
type SignatureOptions struct {
	// Trusted is the key set trusted for every agent (carddrift --jwks
	// FILE: signature.ParseJWKS), nil for none.
	Trusted signature.Keys
	// TrustedURL is the URL of a key set trusted for every agent (--jwks
	// URL), fetched through this Fetcher — SSRF guard, timeouts, per-host
	// limit — and cached by Cache-Control like a jku's; http or https. ""
	// for none.
	TrustedURL string
	// Scoped holds the keys trusted for one agent each (carddrift --trust
	// FILE), by origin in the normal form of ParseOrigin
	// ("https://agent.example", "http://127.0.0.1:41241"): a card served
	// from that origin is verified with these keys and the ones trusted for
	// every agent.
	Scoped map[string]TrustedKeys
	// JKU says which jku URLs are followed (default JKUHTTPS).
	JKU JKUPolicy
	// JWKS configures the key set cache; its AllowHTTP is set from JKU.
	// The sets of TrustedURL and Scoped URLs are cached apart from the jku
	// sets (see JWKS.URL).
	JWKS JWKSOptions
	// ResultTTL is how long the outcome of verifying one body is reused
	// (default the key set cache's MaxTTL, so that a key revoked from a set
	// stops verifying within it). An outcome for which some key set could
	// not be obtained, or held no key for a kid, is reused for the key set
	// cache's FailureTTL only.
	ResultTTL time.Duration
	// MaxResults bounds how many outcomes (one per body and trust scope) are
	// kept, the least recently used evicted first.
	MaxResults int
	// CacheBytes bounds the memory the kept outcomes retain, each counted
	// at its size in memory (the entry, one detector.Signature per
	// signature and the bytes of its strings, copied out of the card); an
	// outcome larger than the bound is not kept.
	CacheBytes int64
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
	for origin, k := range o.Scoped {
		if n, err := ParseOrigin(origin); err != nil || n != origin {
			errs = append(errs, fmt.Errorf("fetcher: Scoped %q: %w in normal form (%q)", origin, ErrNotOrigin, n))
			continue
		}
		if err := k.validate(fmt.Sprintf("Scoped %q", origin)); err != nil {
			errs = append(errs, err)
		}
	}
	if o.ResultTTL < 0 || o.MaxResults < 0 || o.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("fetcher: ResultTTL %v, MaxResults %d and CacheBytes %d must not be negative",
			o.ResultTTL, o.MaxResults, o.CacheBytes))
	}
	return errors.Join(errs...)
}

// maxJKUsPerCard is how many distinct jku URLs the signatures of one card
// may send the Fetcher to (each a key set fetch of up to TotalTimeout,
// chosen by whoever wrote the card); a signature naming another is
// keys-unavailable unless a key trusted for the agent answers its kid. A
// real card names one, two during a key rotation.
const maxJKUsPerCard = 2

// jkuBudget is the keys of one VerifyAt: keys, asked about at most
// maxJKUsPerCard distinct jku URLs. A signature naming another is answered
// by the trusted keys alone (keys asked without its jku), and when they
// hold none for its kid the jku is refused (signature.ErrJKURefused:
// keys-unavailable).
type jkuBudget struct {
	keys signature.Keys
	mu   sync.Mutex
	jkus []string // the distinct jku URLs asked about
}

func (b *jkuBudget) Lookup(ctx context.Context, kid, jku string) ([]signature.Key, error) {
	if jku == "" || b.allow(jku) {
		return b.keys.Lookup(ctx, kid, jku)
	}
	keys, err := b.keys.Lookup(ctx, kid, "")
	if len(keys) > 0 || err != nil {
		return keys, err
	}
	return nil, fmt.Errorf("%w: %s: the card's signatures name more than %d jku URLs", signature.ErrJKURefused, jku, maxJKUsPerCard)
}

func (b *jkuBudget) allow(jku string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slices.Contains(b.jkus, jku) {
		return true
	}
	if len(b.jkus) >= maxJKUsPerCard {
		return false
	}
	b.jkus = append(b.jkus, jku)
	return true
}

// verifier verifies card signatures for a Fetcher and keeps the outcome per
// body and trust scope.
type verifier struct {
	keys       signature.Keys            // for an agent with no keys of its own
	scoped     map[string]signature.Keys // for an agent that has, by origin
	jwks       *JWKS
	ttl        time.Duration
	failureTTL time.Duration
	now        func() time.Time

	mu      sync.Mutex
	results *lru[[sha256.Size]byte, verifyEntry] // by resultKey, counted at entrySize

	verified atomic.Int64 // bodies verified (tests)
}

type verifyEntry struct {
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
	every := TrustedKeys{Keys: o.Trusted, URL: o.TrustedURL}.asKeys(j)
	v := &verifier{
		keys: keySources(j, policy, every), jwks: j, ttl: o.ResultTTL, failureTTL: j.opts.FailureTTL, now: f.opts.Now,
	}
	if len(o.Scoped) > 0 {
		v.scoped = make(map[string]signature.Keys, len(o.Scoped))
		for origin, k := range o.Scoped {
			v.scoped[origin] = keySources(j, policy, append(slices.Clip(every), k.asKeys(j)...))
		}
	}
	setDefault(&v.ttl, j.opts.MaxTTL)
	setDefault(&o.MaxResults, DefaultMaxSignatureResults)
	setDefault(&o.CacheBytes, DefaultSignatureCacheBytes)
	v.results = newLRU[[sha256.Size]byte, verifyEntry](o.MaxResults, o.CacheBytes)
	return v, nil
}

// VerifyAt checks the signatures of the card raw, served at cardURL (or
// submitted by a client for the agent there), against the keys trusted for
// that agent's origin and for every agent, and the key sets the signatures
// name in jku, and returns one detector.Signature per entry of the card's
// "signatures" array, in order; nil for an unsigned card or bytes that are
// not a card.
//
// The outcome is kept per body (by its SHA-256) and trust scope for
// SignatureOptions.ResultTTL, or for the key set cache's FailureTTL when
// some key set could not be obtained or lacked a kid, so a card observed
// again costs a hash. A key set that cannot be fetched makes a signature
// unverified ("keys-unavailable"), never invalid. An outcome reached after
// ctx ended is returned but not kept. Safe for concurrent use.
func (f *Fetcher) VerifyAt(ctx context.Context, cardURL string, raw []byte) []detector.Signature {
	if !bytes.Contains(raw, []byte(`"signatures"`)) && bytes.IndexByte(raw, '\\') < 0 {
		// Unsigned, without a parse. Only a card with no escape at all:
		// "signatur\u0065s" is the same member to every parser.
		return nil
	}
	v := f.verify
	scope, keys := v.scope(cardURL)
	key := resultKey(scope, raw)
	if sigs, ok := v.get(key); ok {
		return sigs
	}
	v.verified.Add(1)
	results, err := signature.Verify(ctx, raw, &jkuBudget{keys: keys})
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
		sigs = cloneSignatures(sigs)
		v.put(key, sigs, ttl)
	}
	return sigs
}

// scope returns the trust scope of a card served at cardURL — its origin
// when keys are trusted for that origin, else "" (every agent's keys only) —
// and the keys that verify it.
func (v *verifier) scope(cardURL string) (string, signature.Keys) {
	if len(v.scoped) == 0 || cardURL == "" {
		return "", v.keys
	}
	origin, err := Origin(cardURL)
	if err != nil {
		return "", v.keys
	}
	if keys, ok := v.scoped[origin]; ok {
		return origin, keys
	}
	return "", v.keys
}

// resultKey is the cache key of the outcome of verifying raw in scope.
func resultKey(scope string, raw []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(raw)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

func (v *verifier) get(key [sha256.Size]byte) ([]detector.Signature, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.results.get(key)
	if !ok {
		return nil, false
	}
	if !v.now().Before(e.expires) {
		v.results.remove(key)
		return nil, false
	}
	return e.sigs, true
}

func (v *verifier) put(key [sha256.Size]byte, sigs []detector.Signature, ttl time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.results.put(key, verifyEntry{sigs: sigs, expires: v.now().Add(ttl)}, entrySize(sigs))
}

// Retained sizes of a kept outcome: its entry, list element and map slot,
// and per signature its value; the bytes of its strings come on top.
const (
	entryOverhead = int64(unsafe.Sizeof(lruEntry[[sha256.Size]byte, verifyEntry]{})) + int64(unsafe.Sizeof(list.Element{})) +
		sha256.Size + 8 + 16 // map slot: key, value pointer, bucket share
	signatureSize = int64(unsafe.Sizeof(detector.Signature{}))
)

// entrySize is the memory an outcome of sigs retains once kept (made by
// cloneSignatures: the slice and one buffer of strings, each counted with
// what the allocator may round it up to).
func entrySize(sigs []detector.Signature) int64 {
	return entryOverhead + allocSize(int64(cap(sigs))*signatureSize) + allocSize(stringBytes(sigs))
}

// allocSize bounds what an allocation of n bytes takes from the heap: small
// objects are rounded up to a size class (at most 1/8 more), large ones to
// whole 8 KiB pages.
func allocSize(n int64) int64 {
	if n <= 32<<10 {
		return n + n/8
	}
	return (n + 8<<10 - 1) &^ (8<<10 - 1)
}

func stringBytes(sigs []detector.Signature) int64 {
	var n int64
	for _, s := range sigs {
		n += int64(len(s.KeyID) + len(s.Alg) + len(s.JKU) + len(s.Thumbprint) + len(s.Source) + len(s.Reason))
	}
	return n
}

// cloneSignatures copies sigs and their strings, into one buffer, out of
// whatever they share memory with (a header decoded from the card), so that
// a kept outcome retains what entrySize counts and nothing of the card.
func cloneSignatures(sigs []detector.Signature) []detector.Signature {
	buf := make([]byte, 0, stringBytes(sigs))
	str := func(s string) string {
		if s == "" {
			return ""
		}
		start := len(buf)
		buf = append(buf, s...)
		return unsafe.String(&buf[start], len(s))
	}
	out := make([]detector.Signature, len(sigs))
	for i, s := range sigs {
		s.KeyID, s.Alg, s.JKU, s.Thumbprint = str(s.KeyID), str(s.Alg), str(s.JKU), str(s.Thumbprint)
		s.Source, s.Reason = str(s.Source), str(s.Reason)
		out[i] = s
	}
	return out
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
