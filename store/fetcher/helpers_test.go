package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

// loopback widens the guard for httptest servers, which listen on 127.0.0.1.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// testOptions are Options for tests against httptest agents: loopback allowed,
// short timeouts, a fake clock.
func testOptions(clk *fakeClock) Options {
	o := Options{
		Allow:          loopback,
		ConnectTimeout: 2 * time.Second,
		TotalTimeout:   5 * time.Second,
		StoreTimeout:   time.Second,
	}
	if clk != nil {
		o.Now = clk.Now
	}
	return o
}

// leasedOptions are testOptions on clk with a lease store of their own,
// which every Fetcher built from them shares, as workers do.
func leasedOptions(clk *fakeClock) (Options, *memstore.Leases) {
	leases := memstore.NewLeases()
	o := testOptions(clk)
	o.Leases = leases
	return o, leases
}

// newFetcher builds a Fetcher closed at the end of the test.
func newFetcher(t *testing.T, o Options) *Fetcher {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// countParses makes f count detector.Parse calls.
func countParses(f *Fetcher) *atomic.Int64 {
	var n atomic.Int64
	f.parse = func(raw []byte) (*detector.Card, error) {
		n.Add(1)
		return detector.Parse(raw)
	}
	return &n
}

// fakeClock is a settable clock for leases.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// cardJSON is a small v1.0 card.
func cardJSON(version string, streaming bool, skills ...string) []byte {
	if len(skills) == 0 {
		skills = []string{"summarize"}
	}
	s := ""
	for i, id := range skills {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":[]}`, id, id)
	}
	return fmt.Appendf(nil, `{"name":"Test Agent","description":"test","version":%q,`+
		`"supportedInterfaces":[{"url":"https://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":%t},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
		version, streaming, s)
}

// agent is an httptest A2A agent serving one card at every path. ETag, when
// set, is honoured with 304s; every request's headers are recorded.
type agent struct {
	srv *httptest.Server

	mu           sync.Mutex
	body         []byte
	etag         string
	cacheControl string
	delay        time.Duration
	gate         chan struct{} // when set, responses wait for it to close
	headers      []http.Header

	requests    atomic.Int64
	conditional atomic.Int64 // requests with If-None-Match
	notModified atomic.Int64 // 304s sent
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
}

func newAgent(t testing.TB, body []byte, etag, cacheControl string) *agent {
	t.Helper()
	a := &agent{body: body, etag: etag, cacheControl: cacheControl}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agent) set(body []byte, etag, cacheControl string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.body, a.etag, a.cacheControl = body, etag, cacheControl
}

func (a *agent) setDelay(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delay = d
}

// hold makes responses wait until the returned func is called.
func (a *agent) hold() (release func()) { return holdGate(&a.mu, &a.gate) }

// holdGate sets *gate, which mu guards and a test server's handlers wait on
// while it is set, to a new channel, and returns the func that clears and
// closes it.
func holdGate(mu *sync.Mutex, gate *chan struct{}) (release func()) {
	ch := make(chan struct{})
	mu.Lock()
	*gate = ch
	mu.Unlock()
	return func() {
		mu.Lock()
		*gate = nil
		mu.Unlock()
		close(ch)
	}
}

func (a *agent) lastHeaders() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.headers) == 0 {
		return nil
	}
	return a.headers[len(a.headers)-1]
}

func (a *agent) url(path string) string { return a.srv.URL + path }

// slowFlight returns an agent whose card (max-age=60) takes delay to
// arrive, a Fetcher on a fake clock and the card's URL: a flight that
// callers can join and leave while it runs.
func slowFlight(t *testing.T, delay time.Duration) (*agent, *Fetcher, string) {
	t.Helper()
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=60")
	a.setDelay(delay)
	return a, newFetcher(t, testOptions(newClock())), a.url("/card")
}

// wantRequests checks that the agent has been sent want requests.
func (a *agent) wantRequests(t *testing.T, want int64) {
	t.Helper()
	if got := a.requests.Load(); got != want {
		t.Errorf("requests = %d, want %d", got, want)
	}
}

func (a *agent) serve(w http.ResponseWriter, r *http.Request) {
	n := a.inFlight.Add(1)
	defer a.inFlight.Add(-1)
	for {
		m := a.maxInFlight.Load()
		if n <= m || a.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	a.requests.Add(1)
	a.mu.Lock()
	a.headers = append(a.headers, r.Header.Clone())
	body, etag, cc, delay, gate := a.body, a.etag, a.cacheControl, a.delay, a.gate
	a.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		a.conditional.Add(1)
		if inm == etag {
			a.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// memCards is a minimal shared store.Cards for tests.
type memCards struct {
	mu   sync.Mutex
	m    map[string][]byte
	gets atomic.Int64
}

func newMemCards() *memCards { return &memCards{m: map[string][]byte{}} }

func (c *memCards) Put(_ context.Context, digest string, raw []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[digest]; !ok {
		c.m[digest] = append([]byte(nil), raw...)
	}
	return nil
}

func (c *memCards) Get(_ context.Context, digest string) ([]byte, error) {
	c.gets.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[digest]
	if !ok {
		return nil, store.ErrNotFound
	}
	return append([]byte(nil), b...), nil
}

// fetchErr asserts err is a *FetchError with the given reason, matching its
// sentinel.
func fetchErr(t *testing.T, err error, want Reason) *FetchError {
	t.Helper()
	fe, ok := asFetchError(err)
	if !ok {
		t.Fatalf("error = %v (%T), want *FetchError with reason %q", err, err, want)
	}
	if fe.Reason != want {
		t.Fatalf("reason = %q, want %q (error: %v)", fe.Reason, want, err)
	}
	if !isSentinel(err, want) {
		t.Fatalf("errors.Is(err, %v) = false for %v", want, err)
	}
	return fe
}

func asFetchError(err error) (*FetchError, bool) {
	var fe *FetchError
	ok := errors.As(err, &fe)
	return fe, ok
}

func isSentinel(err error, r Reason) bool { return errors.Is(err, r) }

func newAgentB(b *testing.B) *agent { return newAgent(b, cardJSON("1", true), `"v1"`, "max-age=300") }

// waitInFlight waits until the agent is serving a request, failing the test if
// the caller feeding done returns first or nothing arrives within 5s.
func (a *agent) waitInFlight(t *testing.T, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for a.inFlight.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the call returned (%v, requests so far %d) before its request reached the agent", err, a.requests.Load())
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request reached the agent within 5s (requests so far %d)", a.requests.Load())
		}
	}
}
