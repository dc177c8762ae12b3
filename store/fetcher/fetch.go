package fetcher

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

// Observation is one look at a live card: the observation the task core
// judges (detector.Observation) and what the fetch was. Fetch leaves
// Fingerprint, Raw and Card empty after a 304; Observe always fills them
// (from its cache or Cards) and sets VerifiedAt, Replicas and Window;
// ObserveAgent also fills Signatures. For a lease, FetchedAt is when the
// fetch behind it completed.
type Observation struct {
	detector.Observation
	// Status is 200 for a full response, 304 for a successful revalidation,
	// and 0 when Observe served the observation from a fresh lease without a
	// request (FromLease).
	Status int
	// CacheControl is the response's Cache-Control as served (its lines
	// joined by ", "), which MaxAge comes from. Fetch fills it; an
	// observation served from a lease has none.
	CacheControl string
	// MaxAge is the lease: Cache-Control max-age minus Age, or the default,
	// clamped to [MinLease, MaxLease].
	MaxAge time.Duration
	// Latency is the time from sending the request to the end of the body (0
	// for a lease).
	Latency time.Duration
	// Raw is the body as served (shared between callers: read-only).
	Raw []byte
	// Full is set when the request was unconditional (no If-None-Match).
	Full bool
	// FromLease is set when Observe made no request: the observation is the
	// shared lease's, fetched earlier by this or another worker.
	FromLease bool
	// Replicas is the agent's window of recent live digests as the shared
	// lease holds it (detector.Replicas; Disagree(now, Window) is split
	// brain).
	Replicas detector.Replicas
	// Fetches, when positive, says to publish this fetch as card.observed,
	// standing for Fetches fetches (this one included) since Since; 0 when
	// nothing new is to be told (Options.ObserveHeartbeat).
	Fetches int
	Since   time.Time
}

// Request is one low-level fetch.
type Request struct {
	// URL is the card URL (http or https).
	URL string
	// ETag and Digest, both set, make the request conditional: If-None-Match
	// is sent and a 304 yields an Observation with this Digest.
	ETag   string
	Digest string
	// MaxAge is the previous lease, kept after a 304 that carries no
	// Cache-Control (a 304 updates only the header fields it sends, RFC 9111
	// §4.3.4).
	MaxAge time.Duration
	// NoCache asks intermediaries to revalidate with the origin
	// (Cache-Control: no-cache); Observe sets it for forced and periodic full
	// fetches.
	NoCache bool
}

// Fetcher fetches agent cards safely and shares observations through leases.
// Create it with New; it is safe for concurrent use. Close it to stop
// in-flight fetches and release connections.
type Fetcher struct {
	opts   Options
	guard  guard
	client *http.Client
	tr     *http.Transport
	hosts  *hostLimiter
	cache  *cardCache
	leases store.Leases
	copy   *leaseCopy // nil: every lease read goes to leases
	cards  store.Cards
	verify *verifier
	ext    extendedClients // credentialed requests (extended.go)

	// parse and digest are detector.Parse and detector.Digest (tests count them).
	parse  func([]byte) (*detector.Card, error)
	digest func([]byte) (string, error)

	// base is canceled by Close; every flight runs under it.
	base       context.Context
	cancelBase context.CancelCauseFunc

	mu      sync.Mutex
	closed  bool
	flights map[string]*flight
	legacy  map[string]bool // agent base URL → legacy agent.json worked
	wg      sync.WaitGroup  // running flights and the lease copy's watch
	copying bool            // the lease copy's watch was started
	started atomic.Int64    // flights started (tests: the copy's fast path starts none)

	closeOnce sync.Once
}

// maxLocalLeases bounds the lease table a Fetcher keeps when Options.Leases
// is nil.
const maxLocalLeases = 1 << 16

// MaxIdleConns bounds the idle connections to agents a Fetcher keeps for
// its next revalidation (at most Options.PerHostConcurrency per agent, each
// closed after 90 s idle); agents beyond it are dialed again for every
// revalidation. Each costs a file descriptor, two goroutines and ~25 KiB.
const MaxIdleConns = 1024

// New builds a Fetcher from opts (defaults applied, then validated). It does
// not touch the network.
func New(opts Options) (*Fetcher, error) {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	allow := make([]netip.Prefix, 0, len(opts.Allow))
	for _, p := range opts.Allow {
		if p.Addr().Is4In6() { // ::ffff:a.b.c.d/n guards a.b.c.d, as dialed addresses are unmapped
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		allow = append(allow, p.Masked())
	}
	opts.Allow = allow
	f := &Fetcher{
		opts:    opts,
		guard:   guard{allow: opts.Allow},
		hosts:   newHostLimiter(opts.PerHostConcurrency),
		cache:   newCardCache(opts.CacheBytes),
		parse:   detector.Parse,
		digest:  detector.Digest,
		flights: make(map[string]*flight),
		legacy:  make(map[string]bool),
	}
	f.leases, f.cards = opts.Leases, opts.Cards
	if f.leases == nil {
		// In this process only; a lease dropped when full costs one fetch.
		f.leases = memstore.NewLeases(memstore.WithMaxEntries(maxLocalLeases))
	}
	if lf, ok := f.leases.(LeaseFollower); ok && opts.LeaseCopyBytes > 0 {
		f.copy = newLeaseCopy(lf, opts.LeaseCopyBytes, opts.LeaseCopyLag, opts.StoreTimeout)
	}
	f.base, f.cancelBase = context.WithCancelCause(context.Background())

	var tlsConf *tls.Config
	if opts.TLSConfig != nil {
		tlsConf = opts.TLSConfig.Clone()
	} else {
		tlsConf = &tls.Config{}
	}
	if tlsConf.MinVersion == 0 {
		tlsConf.MinVersion = tls.VersionTLS12
	}
	dialer := &net.Dialer{
		Timeout:   opts.ConnectTimeout,
		KeepAlive: 30 * time.Second,
		Control:   f.guard.control,
	}
	f.tr = &http.Transport{
		// No proxy: the guard must see the agent's own address, never a
		// proxy's, and environment variables must not redirect card fetches.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    opts.ConnectTimeout,
		ResponseHeaderTimeout:  opts.TotalTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           MaxIdleConns,
		MaxIdleConnsPerHost:    opts.PerHostConcurrency,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	f.client = &http.Client{Transport: f.tr, CheckRedirect: f.checkRedirect}
	v, err := newVerifier(f, opts.Signatures)
	if err != nil {
		return nil, err
	}
	f.verify = v
	return f, nil
}

// Close cancels in-flight fetches (their callers get ReasonCanceled), waits
// for the fetching goroutines to exit, and closes idle connections. Further
// calls return ErrClosed errors. Close is safe to call more than once.
func (f *Fetcher) Close() error {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.cancelBase(ErrClosed)
	})
	f.wg.Wait()
	f.tr.CloseIdleConnections()
	f.ext.close()
	return nil
}

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.opts.MaxRedirects {
		return fmt.Errorf("%w: %d redirects, limit %d", ErrTooManyRedirects, len(via), max(f.opts.MaxRedirects, 0))
	}
	switch req.URL.Scheme {
	case "http", "https":
	default:
		return fmt.Errorf("%w: scheme %q", ErrRedirectRefused, req.URL.Scheme)
	}
	if prev := via[len(via)-1]; prev.URL.Scheme == "https" && req.URL.Scheme == "http" {
		return fmt.Errorf("%w: https to http downgrade to %s", ErrRedirectRefused, req.URL.Redacted())
	}
	return nil
}

// Fetch makes one request for a card, with the Fetcher's fixed headers, SSRF
// guard, timeouts and limits, and parses the body. It neither consults nor
// updates leases and does not coalesce: use Observe for that.
//
// A 200 yields Raw, Card, Digest and Fingerprint; a 304 (only to a
// conditional request) yields req.Digest and no body. Every failure is a
// *FetchError. Fetch returns within Options.TotalTimeout.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (Observation, error) {
	obs := observationAt(req.URL)
	hreq, end, err := f.begin(ctx, req.URL)
	if err != nil {
		return obs, err
	}
	defer end()
	ctx = hreq.Context()
	hreq.Header.Set("Accept", f.opts.Accept)
	hreq.Header.Set("A2A-Version", f.opts.A2AVersion)
	conditional := req.ETag != "" && req.Digest != ""
	if conditional {
		hreq.Header.Set("If-None-Match", req.ETag)
	}
	if req.NoCache {
		hreq.Header.Set("Cache-Control", "no-cache")
	}
	obs.Full = !conditional

	start := time.Now()
	resp, err := f.client.Do(hreq)
	if err != nil {
		obs.Latency = time.Since(start)
		return obs, classifyTransport(req.URL, ctx, err)
	}
	defer resp.Body.Close()
	obs.Status = resp.StatusCode

	obs.CacheControl = strings.Join(resp.Header.Values("Cache-Control"), ", ")

	switch {
	case resp.StatusCode == http.StatusNotModified && conditional:
		obs.Latency = time.Since(start)
		obs.FetchedAt = f.opts.Now()
		obs.Digest = req.Digest
		obs.ETag = parseETag(resp.Header.Values("ETag"))
		if obs.ETag == "" {
			obs.ETag = req.ETag
		}
		obs.MaxAge = f.lease(resp.Header)
		if len(resp.Header.Values("Cache-Control")) == 0 && req.MaxAge > 0 {
			obs.MaxAge = clampDuration(req.MaxAge, f.opts.MinLease, f.opts.MaxLease)
		}
		return obs, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		obs.Latency = time.Since(start)
		return obs, statusError(req.URL, resp)
	}
	raw, err := readBody(ctx, req.URL, resp, f.opts.MaxBodyBytes)
	obs.Latency = time.Since(start)
	if err != nil {
		return obs, err
	}
	return f.withCard(obs, resp, raw)
}

// withCard is obs, a fetch that read raw from resp (a 2xx), with the card
// it parses to, its digest and fingerprint, ETag and lease.
func (f *Fetcher) withCard(obs Observation, resp *http.Response, raw []byte) (Observation, error) {
	card, digest, fingerprint, err := f.read(raw)
	if err != nil {
		return obs, classifyParse(obs.CardURL, resp.StatusCode, err)
	}
	obs.FetchedAt = f.opts.Now()
	obs.Digest, obs.Fingerprint, obs.Raw, obs.Card = digest, fingerprint, raw, card
	obs.ETag = parseETag(resp.Header.Values("ETag"))
	obs.MaxAge = f.lease(resp.Header)
	return obs, nil
}

// statusError is the *FetchError of a fetch of url answered with a final
// status other than 2xx (or a 304 it did not ask for).
func statusError(url string, resp *http.Response) *FetchError {
	return &FetchError{URL: url, Reason: ReasonStatus, Status: resp.StatusCode, Err: fmt.Errorf("HTTP %s", resp.Status)}
}

// read parses and digests a card body. A body this process parsed before,
// byte for byte (the card cache's entry of its digest), is not parsed
// again: an agent that serves the same card without an ETag costs a digest
// per fetch, not a parse. Errors are those of parsing first, then of the
// digest, whichever way the card was read.
func (f *Fetcher) read(raw []byte) (card *detector.Card, digest, fingerprint string, err error) {
	digest, derr := f.digest(raw)
	if derr == nil {
		if e := f.cache.get(digest); e != nil && bytes.Equal(e.card.Raw, raw) {
			return e.card, digest, e.fingerprint, nil
		}
	}
	if card, err = f.parse(raw); err != nil {
		return nil, "", "", err
	}
	if derr != nil {
		return nil, "", "", derr
	}
	return card, digest, detector.Fingerprint(card), nil
}

// begin starts a fetch of rawURL, a card or key set URL: it checks the URL,
// bounds the fetch by ctx, Options.TotalTimeout and the Fetcher's Close
// (cause ErrClosed), and waits for a slot of the URL's host. It returns the
// GET request to make, with the fetch's context and the User-Agent set, and
// end, which the caller calls when the fetch is over (the response body
// read).
func (f *Fetcher) begin(ctx context.Context, rawURL string) (*http.Request, func(), error) {
	u, err := parseHTTPURL(rawURL)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(f.base, func() { cancel(ErrClosed) })
	ctx, cancelT := context.WithTimeout(ctx, f.opts.TotalTimeout)
	cancelAll := func() {
		cancelT()
		stop()
		cancel(nil)
	}
	if f.base.Err() != nil {
		cancelAll()
		return nil, nil, errClosedFetch(rawURL)
	}
	release, err := f.hosts.acquire(ctx, strings.ToLower(u.Host))
	if err != nil {
		fe := classifyTransport(rawURL, ctx, fmt.Errorf("waiting for a host slot: %w", err))
		cancelAll()
		return nil, nil, fe
	}
	end := func() {
		release()
		cancelAll()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		end()
		return nil, nil, &FetchError{URL: rawURL, Reason: ReasonInvalidURL, Err: err}
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	return req, end, nil
}

// readBody reads the body of resp, a 2xx response to a fetch of url made
// with ctx, of at most limit bytes: a longer one, declared or read, is
// ReasonTooLarge.
func readBody(ctx context.Context, url string, resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, &FetchError{URL: url, Reason: ReasonTooLarge, Status: resp.StatusCode,
			Err: fmt.Errorf("Content-Length %d exceeds %d", resp.ContentLength, limit)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		fe := classifyTransport(url, ctx, fmt.Errorf("reading body: %w", err))
		fe.Status = resp.StatusCode
		return nil, fe
	}
	if int64(len(body)) > limit {
		return nil, &FetchError{URL: url, Reason: ReasonTooLarge, Status: resp.StatusCode,
			Err: fmt.Errorf("body exceeds %d bytes", limit)}
	}
	return body, nil
}

func (f *Fetcher) lease(h http.Header) time.Duration {
	return leaseFor(h, f.opts.DefaultLease, f.opts.MinLease, f.opts.MaxLease)
}

// errClosedFetch is the error of a call made after Close.
func errClosedFetch(url string) error {
	return &FetchError{URL: url, Reason: ReasonCanceled, Err: ErrClosed}
}

// observationAt is the Observation of cardURL before anything was read.
func observationAt(cardURL string) Observation {
	var o Observation
	o.CardURL = cardURL
	return o
}
