package fetcher

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/store"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultConnectTimeout     = 3 * time.Second
	DefaultTotalTimeout       = 10 * time.Second
	DefaultMaxBodyBytes       = 1 << 20
	DefaultMaxRedirects       = 3
	DefaultPerHostConcurrency = 4
	DefaultMinLease           = time.Second
	DefaultMaxLease           = 5 * time.Minute
	DefaultDefaultLease       = 30 * time.Second
	DefaultFullFetchInterval  = 5 * time.Minute
	DefaultConsistencyWindow  = 2 * time.Minute
	DefaultStoreTimeout       = 2 * time.Second
	DefaultCacheBytes         = 32 << 20
	DefaultLeaseCopyBytes     = 4 << 20
	DefaultLeaseCopyLag       = 200 * time.Millisecond
	DefaultObserveHeartbeat   = 5 * time.Minute
	DefaultUserAgent          = "carddrift/1 (+https://github.com/carddrift/carddrift)"
	DefaultA2AVersion         = "1.0"
	DefaultAccept             = "application/json"
)

// maxBodyBytesCap is the largest MaxBodyBytes Validate accepts: the size
// limit of detector.Parse and detector.Digest.
const maxBodyBytesCap = jcs.DefaultMaxBytes

// Options configure a Fetcher. The zero value of every field means its
// default; New applies the defaults and then Validate. Options are read once
// by New: changing them afterwards has no effect.
type Options struct {
	// ConnectTimeout bounds each TCP connect and TLS handshake. Default 3s.
	ConnectTimeout time.Duration
	// TotalTimeout bounds one fetch from waiting for a host slot to the last
	// byte of the body, redirects included. Default 10s.
	TotalTimeout time.Duration
	// MaxBodyBytes is the largest card body read; a declared or actual body
	// over it is ReasonTooLarge. At most 1 byte more is ever read. Default and
	// maximum 1 MiB (the limit of the canonical digest).
	MaxBodyBytes int64
	// MaxRedirects is how many redirects one fetch follows. Default 3; a
	// negative value follows none (a redirect is then ReasonTooManyRedirects).
	MaxRedirects int
	// PerHostConcurrency is how many fetches run at once against one host
	// (host:port of the card URL); further fetches wait, within TotalTimeout.
	// Default 4.
	PerHostConcurrency int

	// MinLease is the lower clamp of a lease. no-cache, no-store and max-age=0
	// get exactly this, so they mean "revalidate at every capability-dependent
	// transition", give or take MinLease of coalescing. Default 1s; a negative
	// value means no lower clamp (0).
	MinLease time.Duration
	// MaxLease is the upper clamp of a lease. Default 5m.
	MaxLease time.Duration
	// DefaultLease is the lease of a response without max-age, no-cache or
	// no-store, clamped to [MinLease, MaxLease]. Default 30s.
	DefaultLease time.Duration
	// FullFetchInterval is how often an unconditional fetch replaces
	// If-None-Match revalidation, to catch a body that changed behind an ETag
	// derived from the card's version only. Default 5m; negative disables it.
	FullFetchInterval time.Duration

	// ConsistencyWindow is how far back the lease's window of live digests
	// reaches (detector.Replicas: split brain is decided within it). Every
	// worker sharing Leases should use the same. Default 2m.
	ConsistencyWindow time.Duration

	// Allow widens the SSRF guard: addresses inside these prefixes may be
	// dialed even though they are loopback, private, link-local and so on.
	// Cloud metadata addresses (169.254.169.254, 169.254.170.2, fd00:ec2::254,
	// 100.100.100.200) stay refused unless a prefix is exactly that address.
	Allow []netip.Prefix
	// TLSConfig is cloned for every connection (RootCAs for a private CA or a
	// test server). nil means the system roots. Verification is always on:
	// InsecureSkipVerify is refused by Validate.
	TLSConfig *tls.Config

	// UserAgent is sent with every request. Default DefaultUserAgent.
	UserAgent string
	// A2AVersion is the A2A-Version header of every request, fixed because
	// servers may serve a card per requested version (a header that changed
	// between fetches would look like drift). Default "1.0" (v0.x servers
	// ignore it).
	A2AVersion string
	// Accept is the Accept header of every request. Default "application/json".
	Accept string

	// Leases shares observations between workers: one fetch per lease across
	// all of them. nil means a lease table inside this Fetcher (coalescing in
	// this process only).
	Leases store.Leases
	// Cards stores card bodies by digest so that a worker can use an
	// observation another worker fetched. nil means only this Fetcher's own
	// cache: an observation fetched elsewhere then costs one unconditional
	// fetch here. Give every worker the same Leases and Cards.
	Cards store.Cards
	// StoreTimeout bounds each Leases and Cards call. Default 2s.
	StoreTimeout time.Duration
	// CacheBytes bounds the in-process cache of parsed cards by digest (sizes
	// counted as body bytes). Default 32 MiB; it always holds at least the
	// card being returned.
	CacheBytes int64
	// LeaseCopyBytes bounds the local copy of the shared leases a Fetcher
	// keeps, current by a watch, when Leases is a LeaseFollower (such as
	// store.KVLeases): lease reads are served from it, writes stay
	// compare-and-set on the store. Default 4 MiB; negative disables it.
	LeaseCopyBytes int64
	// LeaseCopyLag is how stale the copy may be: it serves reads only while
	// it holds every lease write committed up to LeaseCopyLag ago (checked
	// against the bucket's head every LeaseCopyLag/4); reads go to the store
	// otherwise. Default 200ms.
	LeaseCopyLag time.Duration

	// ObserveHeartbeat is how often, at most, a card.observed that says
	// nothing new is published for a card URL: every worker sharing Leases
	// publishes one when the card's digest, signer or result class changes,
	// and otherwise one per heartbeat that counts the fetches since
	// (Observation.Fetches). Default 5m; negative: one per fetch (contract
	// v1.2). Every worker sharing Leases should use the same.
	ObserveHeartbeat time.Duration

	// OnFetch, if set, is called once for every HTTP fetch this Fetcher
	// completes (not once per caller: coalesced callers share one fetch). err
	// is nil for a 200 or 304 — obs is then what card.observed carries, to
	// be published when obs.Fetches > 0 — else a *FetchError and obs holds
	// what was known (CardURL, Status, Latency). It runs on the fetching
	// goroutine before waiting callers are released: keep it short and
	// never call back into the Fetcher.
	OnFetch func(obs Observation, err error)

	// OnStoreError, if set, is called when a Leases or Cards write that
	// follows a successful fetch fails, or a stored body does not parse; the
	// error wraps ErrStore. After a lease write fails the observation is
	// still returned (other workers then fetch for themselves); after a
	// Cards write fails it is not — Observe returns the error, since what
	// names a digest promises its body — and the lease is left as it was.
	// Same rules as OnFetch.
	OnStoreError func(err error)

	// Signatures configure how the Fetcher verifies the signatures of the
	// cards it observes (Verify; ObserveAgent fills Observation.Signatures).
	// The zero value follows https jku URLs and trusts no key of its own.
	Signatures SignatureOptions

	// Credentials, if set, say what to present to an agent origin for its
	// authenticated extended card (ObserveExtended; carddrift serve
	// --agent-credentials FILE, a *CredentialsFile). nil: no extended card
	// is fetched. Credentials go only to the origin they are for.
	Credentials CredentialSource

	// Now is the clock for leases. Default time.Now. Timeouts always use the
	// real clock.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	setDefault(&o.ConnectTimeout, DefaultConnectTimeout)
	setDefault(&o.TotalTimeout, DefaultTotalTimeout)
	setDefault(&o.MinLease, DefaultMinLease)
	if o.MinLease < 0 {
		o.MinLease = 0
	}
	setDefault(&o.MaxLease, DefaultMaxLease)
	setDefault(&o.DefaultLease, DefaultDefaultLease)
	setDefault(&o.FullFetchInterval, DefaultFullFetchInterval)
	setDefault(&o.ConsistencyWindow, DefaultConsistencyWindow)
	setDefault(&o.StoreTimeout, DefaultStoreTimeout)
	setDefault(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&o.MaxRedirects, DefaultMaxRedirects)
	setDefault(&o.PerHostConcurrency, DefaultPerHostConcurrency)
	setDefault(&o.CacheBytes, DefaultCacheBytes)
	setDefault(&o.LeaseCopyBytes, DefaultLeaseCopyBytes)
	setDefault(&o.LeaseCopyLag, DefaultLeaseCopyLag)
	setDefault(&o.ObserveHeartbeat, DefaultObserveHeartbeat)
	setDefault(&o.UserAgent, DefaultUserAgent)
	setDefault(&o.A2AVersion, DefaultA2AVersion)
	setDefault(&o.Accept, DefaultAccept)
	if o.Now == nil {
		o.Now = time.Now
	}
}

// setDefault sets *p to v if it is the zero value.
func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports every invalid setting (joined). New calls it after applying
// defaults; call it yourself to check flags before building a Fetcher.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("fetcher: "+format, a...)) }
	if o.ConnectTimeout <= 0 {
		bad("ConnectTimeout %v must be positive", o.ConnectTimeout)
	}
	if o.TotalTimeout <= 0 {
		bad("TotalTimeout %v must be positive", o.TotalTimeout)
	}
	if o.ConnectTimeout > o.TotalTimeout {
		bad("ConnectTimeout %v exceeds TotalTimeout %v", o.ConnectTimeout, o.TotalTimeout)
	}
	if o.MaxBodyBytes <= 0 || o.MaxBodyBytes > maxBodyBytesCap {
		bad("MaxBodyBytes %d must be in (0, %d]", o.MaxBodyBytes, maxBodyBytesCap)
	}
	if o.PerHostConcurrency < 1 {
		bad("PerHostConcurrency %d must be at least 1", o.PerHostConcurrency)
	}
	if o.MinLease < 0 || o.MaxLease <= 0 || o.MinLease > o.MaxLease {
		bad("leases need 0 <= MinLease (%v) <= MaxLease (%v), MaxLease > 0", o.MinLease, o.MaxLease)
	}
	if o.DefaultLease < 0 {
		bad("DefaultLease %v must not be negative", o.DefaultLease)
	}
	if o.ConsistencyWindow <= 0 {
		bad("ConsistencyWindow %v must be positive", o.ConsistencyWindow)
	}
	if o.StoreTimeout <= 0 {
		bad("StoreTimeout %v must be positive", o.StoreTimeout)
	}
	if o.CacheBytes < 0 {
		bad("CacheBytes %d must not be negative", o.CacheBytes)
	}
	if o.LeaseCopyLag <= 0 {
		bad("LeaseCopyLag %v must be positive", o.LeaseCopyLag)
	}
	for _, p := range o.Allow {
		if !p.IsValid() {
			bad("Allow prefix %v is invalid", p)
		}
	}
	if err := o.Signatures.validate(); err != nil {
		errs = append(errs, err)
	}
	if o.TLSConfig != nil && o.TLSConfig.InsecureSkipVerify {
		bad("TLSConfig.InsecureSkipVerify is not allowed: card fetches always verify TLS")
	}
	for _, h := range []struct{ name, v string }{
		{"UserAgent", o.UserAgent}, {"A2AVersion", o.A2AVersion}, {"Accept", o.Accept},
	} {
		if !validHeaderValue(h.v) {
			bad("%s %q contains control characters", h.name, h.v)
		}
	}
	return errors.Join(errs...)
}

// ParseAllow reads a comma-separated list of CIDR prefixes or single
// addresses (the --fetch-allow flag) into Options.Allow. Blank items are
// skipped; prefixes are masked ("10.1.2.3/8" means 10.0.0.0/8).
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "/") {
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("fetcher: allow %q: %w", item, err)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("fetcher: allow %q: %w", item, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
