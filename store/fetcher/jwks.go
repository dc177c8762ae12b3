package fetcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/carddrift/carddrift/detector/signature"
)

// Defaults applied by NewJWKS to zero-valued JWKSOptions fields.
const (
	DefaultJWKSMinTTL       = 30 * time.Second
	DefaultJWKSMaxTTL       = time.Hour
	DefaultJWKSDefaultTTL   = 5 * time.Minute
	DefaultJWKSFailureTTL   = 30 * time.Second
	DefaultJWKSMaxEntries   = 256
	DefaultJWKSMaxBytes     = 16 << 20
	DefaultJWKSMaxBodyBytes = 256 << 10
	DefaultJWKSAccept       = "application/jwk-set+json, application/json"
)

// JWKSOptions configure a JWKS. The zero value of every field means its
// default.
type JWKSOptions struct {
	// MinTTL and MaxTTL clamp how long a fetched key set is used: its
	// Cache-Control max-age minus Age, MinTTL for no-cache, no-store or
	// max-age=0, DefaultTTL without max-age. MinTTL is also how old a set
	// must be before a kid it lacks makes Lookup fetch it again (a key
	// rotation is seen within MinTTL). Defaults 30s and 1h: keys change
	// rarely, and a revoked key must not outlive MaxTTL.
	MinTTL, MaxTTL time.Duration
	// DefaultTTL is the lifetime of a set served without max-age. Default 5m.
	DefaultTTL time.Duration
	// FailureTTL is how long a failed fetch is remembered: lookups meanwhile
	// fail at once with the same error, so a dead or hostile key set URL
	// costs one fetch per FailureTTL however many cards name it. A fetch
	// that fails once its caller is done (canceled, or past the caller's own
	// deadline) is not remembered. Default 30s.
	FailureTTL time.Duration
	// MaxEntries bounds how many key set URLs are cached, and MaxBytes the
	// memory the cached jku key sets retain (each counted at
	// jwksEntrySize), the least recently used evicted first. The key sets
	// of URL (the operator's) are kept apart: never evicted, not counted.
	MaxEntries int
	MaxBytes   int64
	// MaxBodyBytes is the largest key set read; a declared or actual body
	// over it is ReasonTooLarge. Default 256 KiB, at most 1 MiB.
	MaxBodyBytes int64
	// AllowHTTP lets Lookup follow a jku that is http rather than https
	// (off by default: A2A §8.4.3). URL takes http or https either way.
	AllowHTTP bool
}

func (o *JWKSOptions) setDefaults() {
	setDefault(&o.MinTTL, DefaultJWKSMinTTL)
	setDefault(&o.MaxTTL, DefaultJWKSMaxTTL)
	setDefault(&o.DefaultTTL, DefaultJWKSDefaultTTL)
	setDefault(&o.FailureTTL, DefaultJWKSFailureTTL)
	setDefault(&o.MaxEntries, DefaultJWKSMaxEntries)
	setDefault(&o.MaxBytes, DefaultJWKSMaxBytes)
	setDefault(&o.MaxBodyBytes, DefaultJWKSMaxBodyBytes)
}

// Validate reports every invalid setting (joined). NewJWKS calls it after
// applying defaults.
func (o JWKSOptions) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("fetcher: jwks: "+format, a...)) }
	if o.MinTTL <= 0 || o.MaxTTL < o.MinTTL {
		bad("need 0 < MinTTL (%v) <= MaxTTL (%v)", o.MinTTL, o.MaxTTL)
	}
	if o.DefaultTTL < 0 || o.FailureTTL < 0 {
		bad("DefaultTTL %v and FailureTTL %v must not be negative", o.DefaultTTL, o.FailureTTL)
	}
	if o.MaxEntries < 1 {
		bad("MaxEntries %d must be at least 1", o.MaxEntries)
	}
	if o.MaxBytes < 1 {
		bad("MaxBytes %d must be at least 1", o.MaxBytes)
	}
	if o.MaxBodyBytes <= 0 || o.MaxBodyBytes > maxBodyBytesCap {
		bad("MaxBodyBytes %d must be in (0, %d]", o.MaxBodyBytes, maxBodyBytesCap)
	}
	return errors.Join(errs...)
}

// JWKS fetches JSON Web Key Sets through its Fetcher — the same SSRF guard,
// connect and total timeouts, per-host concurrency, redirect policy, TLS
// settings and User-Agent as card fetches, with its own body limit — and
// caches them by Cache-Control. It implements signature.Keys over the jku a
// signature names; URL gives the Keys of one fixed key set (--jwks URL).
//
// Every failure is a *FetchError with the card fetches' reasons; a body that
// is JSON but not a key set is ReasonNotACard (wrapping
// signature.ErrInvalidJWKS), a jku that is not https (without AllowHTTP)
// ReasonInvalidURL. Concurrent lookups of one URL share one fetch. A JWKS
// starts no goroutines; closing its Fetcher cancels its fetches. It is safe
// for concurrent use.
type JWKS struct {
	f    *Fetcher
	opts JWKSOptions

	mu      sync.Mutex
	sets    *lru[string, *jwksEntry] // the jku sets by canonical URL, counted at their size
	fixed   map[string]*jwksEntry    // the sets of URL, by canonical URL (nil until fetched)
	flights map[string]*jwksFlight
}

// jwksEntry is one cached fetch: a key set or the error of fetching it.
type jwksEntry struct {
	url     string
	set     *signature.KeySet
	err     error
	fetched time.Time
	expires time.Time
	size    int64 // jwksEntrySize
}

// jwksEntrySize is what a cached key set of a body of n bytes is counted
// at: a parsed set retains up to about 1.6 times its JSON (measured with
// x5c certificate chains), a failure little more than its error.
func jwksEntrySize(n int) int64 { return 2*int64(n) + 1<<10 }

// jwksFlight is a fetch in progress; entry is set before done is closed (nil
// when the fetch was canceled and is not worth sharing).
type jwksFlight struct {
	done  chan struct{}
	entry *jwksEntry
}

// NewJWKS returns a key set cache fetching through f (defaults applied, then
// validated). It does not touch the network.
func NewJWKS(f *Fetcher, opts JWKSOptions) (*JWKS, error) {
	if f == nil {
		return nil, errors.New("fetcher: jwks: nil Fetcher")
	}
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &JWKS{
		f:       f,
		opts:    opts,
		sets:    newLRU[string, *jwksEntry](opts.MaxEntries, opts.MaxBytes),
		fixed:   make(map[string]*jwksEntry),
		flights: make(map[string]*jwksFlight),
	}, nil
}

// Lookup implements signature.Keys: the keys with key id kid in the key set
// at jku, fetched or cached. A signature without jku gets no keys (nil, nil).
// When the cached set lacks kid and is older than MinTTL it is fetched again
// first, so a rotated key is found.
func (j *JWKS) Lookup(ctx context.Context, kid, jku string) ([]signature.Key, error) {
	if jku == "" {
		return nil, nil
	}
	if !j.opts.AllowHTTP && !strings.HasPrefix(strings.ToLower(jku), "https://") {
		return nil, &FetchError{URL: jku, Reason: ReasonInvalidURL, Err: errors.New("a jku must be an https URL")}
	}
	return j.lookup(ctx, jku, kid)
}

// URL returns the signature.Keys of the one key set at url (http or https),
// whatever jku a signature names: the operator's --jwks URL, or a --trust
// file's. Its set is cached apart from the jku sets: however many jku URLs
// cards name, it is never evicted (it is refreshed by Cache-Control as they
// are).
func (j *JWKS) URL(url string) signature.Keys {
	if key, err := CanonicalURL(url); err == nil {
		j.mu.Lock()
		if _, ok := j.fixed[key]; !ok {
			j.fixed[key] = nil
		}
		j.mu.Unlock()
	}
	return fixedJWKS{j: j, url: url}
}

type fixedJWKS struct {
	j   *JWKS
	url string
}

func (k fixedJWKS) Lookup(ctx context.Context, kid, _ string) ([]signature.Key, error) {
	return k.j.lookup(ctx, k.url, kid)
}

func (j *JWKS) lookup(ctx context.Context, url, kid string) ([]signature.Key, error) {
	e, err := j.get(ctx, url, false)
	if err != nil {
		return nil, err
	}
	keys, _ := e.set.Lookup(ctx, kid, "")
	if len(keys) > 0 {
		return keys, nil
	}
	if e, err = j.get(ctx, url, true); err != nil {
		return nil, err
	}
	return e.set.Lookup(ctx, kid, "")
}

// get returns a fresh entry for url (refresh: also one fetched less than
// MinTTL ago), fetching it if needed. The error is that of the entry.
func (j *JWKS) get(ctx context.Context, url string, refresh bool) (*jwksEntry, error) {
	key, err := CanonicalURL(url)
	if err != nil {
		return nil, err
	}
	for {
		j.mu.Lock()
		now := j.f.opts.Now()
		if e := j.cached(key); e != nil {
			fresh := now.Before(e.expires)
			if fresh && (!refresh || e.err != nil || now.Sub(e.fetched) < j.opts.MinTTL) {
				j.mu.Unlock()
				return e, e.err
			}
		}
		if fl, ok := j.flights[key]; ok {
			j.mu.Unlock()
			select {
			case <-fl.done:
				if fl.entry == nil {
					continue // that fetch was canceled by its caller: try ours
				}
				return fl.entry, fl.entry.err
			case <-ctx.Done():
				return nil, &FetchError{URL: url, Reason: ReasonCanceled, Err: context.Cause(ctx)}
			}
		}
		fl := &jwksFlight{done: make(chan struct{})}
		j.flights[key] = fl
		j.mu.Unlock()

		e := j.fetch(ctx, key)
		j.mu.Lock()
		delete(j.flights, key)
		// A failure is remembered only when it says something about the
		// URL: not when the caller left or its own deadline ended (a
		// card's earlier lookups can spend the handler's time on purpose).
		var fe *FetchError
		if e.err == nil || ctx.Err() == nil && (!errors.As(e.err, &fe) || fe.Reason != ReasonCanceled) {
			j.store(e)
			fl.entry = e
		}
		close(fl.done)
		j.mu.Unlock()
		return e, e.err
	}
}

// cached returns the entry for key (a canonical URL), marking it recently
// used, or nil. j.mu is held.
func (j *JWKS) cached(key string) *jwksEntry {
	if e, ok := j.fixed[key]; ok && e != nil {
		return e
	}
	e, _ := j.sets.get(key)
	return e
}

// store caches e: the set of a URL apart, any other evicting the least
// recently used beyond MaxEntries and MaxBytes (one larger than MaxBytes is
// not kept). j.mu is held.
func (j *JWKS) store(e *jwksEntry) {
	if _, ok := j.fixed[e.url]; ok {
		j.fixed[e.url] = e
		return
	}
	j.sets.put(e.url, e, e.size)
}

// fetch makes one request for the key set at url (a CanonicalURL) and
// returns the entry to cache: the set and its TTL, or the error and
// FailureTTL. It returns within the Fetcher's TotalTimeout.
func (j *JWKS) fetch(ctx context.Context, url string) *jwksEntry {
	set, n, ttl, err := j.fetchSet(ctx, url)
	now := j.f.opts.Now()
	e := &jwksEntry{url: url, set: set, err: err, fetched: now, size: jwksEntrySize(n)}
	if err != nil {
		e.set, ttl = nil, j.opts.FailureTTL
	}
	e.expires = now.Add(ttl)
	return e
}

// fetchSet fetches the key set at url; n is the length of its body.
func (j *JWKS) fetchSet(ctx context.Context, url string) (set *signature.KeySet, n int, ttl time.Duration, err error) {
	req, end, err := j.f.begin(ctx, url)
	if err != nil {
		return nil, 0, 0, err
	}
	defer end()
	ctx = req.Context()
	req.Header.Set("Accept", DefaultJWKSAccept)
	resp, err := j.f.client.Do(req)
	if err != nil {
		return nil, 0, 0, classifyTransport(url, ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, 0, 0, statusError(url, resp)
	}
	body, err := readBody(ctx, url, resp, j.opts.MaxBodyBytes)
	if err != nil {
		return nil, 0, 0, err
	}
	set, err = signature.ParseJWKS(body)
	if err != nil {
		// JSON-level failures get their own reasons; JSON that is not a key
		// set is "not-a-card" (not the document expected).
		return nil, 0, 0, classifyParse(url, resp.StatusCode, err)
	}
	return set, len(body), leaseFor(resp.Header, j.opts.DefaultTTL, j.opts.MinTTL, j.opts.MaxTTL), nil
}
