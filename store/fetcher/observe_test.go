package fetcher

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
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

func TestFetchSendsFixedHeaders(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=0")
	clk := newClock()
	o := testOptions(clk)
	o.MinLease = -1 // revalidate every time
	f := newFetcher(t, o)
	ctx := context.Background()

	for i := range 3 {
		clk.Advance(time.Second)
		if _, err := f.Observe(ctx, a.url("/card"), i == 2); err != nil {
			t.Fatalf("Observe %d: %v", i, err)
		}
		h := a.lastHeaders()
		for name, want := range map[string]string{
			"Accept":      DefaultAccept,
			"A2a-Version": DefaultA2AVersion,
			"User-Agent":  DefaultUserAgent,
		} {
			if got := h.Get(name); got != want {
				t.Errorf("request %d: %s = %q, want %q", i, name, got, want)
			}
		}
		wantINM := map[int]string{0: "", 1: `"v1"`, 2: ""}[i] // first fetch, revalidation, forced
		if got := h.Get("If-None-Match"); got != wantINM {
			t.Errorf("request %d: If-None-Match = %q, want %q", i, got, wantINM)
		}
	}
	a.wantRequests(t, 3)
}

func TestObserveFirstFetch(t *testing.T) {
	body := cardJSON("1", true)
	a := newAgent(t, body, `"v1"`, "max-age=60")
	clk := newClock()
	f := newFetcher(t, testOptions(clk))

	obs, err := f.Observe(context.Background(), a.url("/.well-known/agent-card.json"), false)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if obs.Status != 200 || !obs.Full || obs.FromLease {
		t.Errorf("Status, Full, FromLease = %d, %t, %t; want 200, true, false", obs.Status, obs.Full, obs.FromLease)
	}
	if obs.ETag != `"v1"` || obs.MaxAge != time.Minute {
		t.Errorf("ETag, MaxAge = %q, %v; want \"v1\", 1m", obs.ETag, obs.MaxAge)
	}
	if obs.Card == nil || obs.Card.Version != "1" || string(obs.Raw) != string(body) {
		t.Fatalf("Card = %+v, Raw = %q", obs.Card, obs.Raw)
	}
	if obs.Digest == "" || obs.Fingerprint == "" || obs.Latency <= 0 || !obs.FetchedAt.Equal(clk.Now()) {
		t.Errorf("Digest %q, Fingerprint %q, Latency %v, FetchedAt %v", obs.Digest, obs.Fingerprint, obs.Latency, obs.FetchedAt)
	}

	// Within the lease: no request, same observation.
	again, err := f.Observe(context.Background(), obs.CardURL, false)
	if err != nil {
		t.Fatalf("Observe within lease: %v", err)
	}
	if !again.FromLease || again.Status != 0 || again.Digest != obs.Digest || again.Card != obs.Card {
		t.Errorf("within lease: FromLease %t Status %d Digest %q", again.FromLease, again.Status, again.Digest)
	}
	a.wantRequests(t, 1)
}

// revalidate observes url on f, then n times more, each once the 10 s
// lease has expired on clk; it returns the first observation and the later
// ones.
func revalidate(t *testing.T, f *Fetcher, clk *fakeClock, url string, n int) (Observation, []Observation) {
	t.Helper()
	first, err := f.Observe(t.Context(), url, false)
	if err != nil {
		t.Fatal(err)
	}
	later := make([]Observation, n)
	for i := range later {
		clk.Advance(11 * time.Second)
		if later[i], err = f.Observe(t.Context(), url, false); err != nil {
			t.Fatalf("revalidation %d: %v", i, err)
		}
	}
	return first, later
}

// A 304 reuses the previous digest and body: no parse, no hash.
func TestObserveRevalidates304WithoutRehash(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=10")
	clk := newClock()
	f := newFetcher(t, testOptions(clk))
	parses := countParses(f)
	var hashes atomic.Int64
	digest := f.digest
	f.digest = func(raw []byte) (string, error) { hashes.Add(1); return digest(raw) }
	first, later := revalidate(t, f, clk, a.url("/card"), 3)
	for i, obs := range later {
		if obs.Status != 304 || obs.Full || obs.FromLease {
			t.Errorf("revalidation %d: Status %d Full %t FromLease %t, want 304 false false", i, obs.Status, obs.Full, obs.FromLease)
		}
		if obs.Digest != first.Digest || obs.Fingerprint != first.Fingerprint || obs.Card != first.Card {
			t.Errorf("revalidation %d: digest %q, want %q (and the same card)", i, obs.Digest, first.Digest)
		}
	}
	if got := parses.Load(); got != 1 {
		t.Errorf("parses = %d, want 1", got)
	}
	if got := hashes.Load(); got != 1 {
		t.Errorf("digests = %d, want 1", got)
	}
	if got, want := a.notModified.Load(), int64(3); got != want {
		t.Errorf("304s = %d, want %d", got, want)
	}
}

// At most one fetch per worker per lease, never one per transition: 60
// concurrent callers on 3 Fetchers that share Leases and Cards cost 1 to 3
// requests per lease, at most one lease write per fetch, and one
// card.observed decision for the new card (none for the 304s).
func TestObserveOneRequestPerLeaseAcrossWorkers(t *testing.T) {
	forEachStore(t, testOneRequestPerLease)
}

// sharedStores are the Leases and Cards implementations the cross-worker
// tests run against: this package's own, package memstore's (which has
// the JetStream stores' semantics, JSON round trip included), and a
// JetStream bucket, which every Fetcher reads through its lease copy.
func forEachStore(t *testing.T, fn func(t *testing.T, leases store.Leases, cards store.Cards)) {
	t.Run("local", func(t *testing.T) { fn(t, memstore.NewLeases(), newMemCards()) })
	t.Run("memstore", func(t *testing.T) { fn(t, memstore.NewLeases(), memstore.NewCards()) })
	t.Run("jetstream", func(t *testing.T) {
		_, _, js := natstest.StartJetStream(t)
		fn(t, kvLeases(t, js), memstore.NewCards())
	})
}

// leaseRev is the revision of url's lease in leases, 0 when there is none:
// in a store that holds only it, how many writes it took.
func leaseRev(t *testing.T, leases store.Leases, url string) uint64 {
	t.Helper()
	_, rev, err := leases.Get(context.Background(), url)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return rev
}

func testOneRequestPerLease(t *testing.T, leases store.Leases, cards store.Cards) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=30")
	a.setDelay(50 * time.Millisecond)
	clk := newClock()
	var fetchers []*Fetcher
	var fetches, reports atomic.Int64
	for range 3 {
		o := testOptions(clk)
		o.Leases, o.Cards = leases, cards
		o.OnFetch = func(obs Observation, err error) {
			fetches.Add(1)
			if obs.Fetches > 0 {
				reports.Add(1)
			}
		}
		fetchers = append(fetchers, newFetcher(t, o))
	}
	url := a.url("/.well-known/agent-card.json")

	round := func(name string) {
		t.Helper()
		const n = 60
		req0, rev0 := a.requests.Load(), leaseRev(t, leases, url)
		var wg sync.WaitGroup
		start := make(chan struct{})
		digests := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				<-start
				obs, err := fetchers[i%3].Observe(context.Background(), url, false)
				digests[i], errs[i] = obs.Digest, err
				if err == nil && obs.Card == nil {
					errs[i] = errors.New("observation without a card")
				}
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil || digests[i] != digests[0] {
				t.Fatalf("%s: caller %d: digest %q err %v; want %q", name, i, digests[i], errs[i], digests[0])
			}
		}
		req, writes := a.requests.Load()-req0, leaseRev(t, leases, url)-rev0
		if req < 1 || req > 3 {
			t.Fatalf("%s: %d requests for %d callers on 3 workers, want 1 to 3 (at most one per worker)", name, req, n)
		}
		if writes < 1 || writes > uint64(req) {
			t.Fatalf("%s: %d lease writes for %d fetches, want 1 to %d (at most one per fetch)", name, writes, req, req)
		}
	}

	round("first lease")
	if n := reports.Load(); n != 1 {
		t.Errorf("first lease: %d card.observed decisions, want 1", n)
	}
	first := a.requests.Load()
	clk.Advance(31 * time.Second)
	round("second lease")
	if got, want := a.notModified.Load(), a.requests.Load()-first; got != want {
		t.Errorf("304s = %d, want %d (every revalidation of the second lease)", got, want)
	}
	if got := fetches.Load(); got != a.requests.Load() {
		t.Errorf("OnFetch calls = %d, want one per request (%d)", got, a.requests.Load())
	}
	if n := reports.Load(); n != 1 {
		t.Errorf("card.observed decisions = %d after the 304s, want still 1", n)
	}
}

// raceAgent serves bodies[i] (a 503 when nil) to its i-th request, once
// open(i) lets it: a test decides which of two racing fetches answers
// first.
type raceAgent struct {
	srv     *httptest.Server
	bodies  [][]byte
	gates   []chan struct{}
	arrived chan int
	n       atomic.Int64
}

func newRaceAgent(t *testing.T, bodies ...[]byte) *raceAgent {
	a := &raceAgent{bodies: bodies, arrived: make(chan int, len(bodies))}
	for range bodies {
		a.gates = append(a.gates, make(chan struct{}))
	}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(a.n.Add(1)) - 1
		if i >= len(a.bodies) {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		a.arrived <- i
		select {
		case <-a.gates[i]:
		case <-r.Context().Done():
			return
		}
		if a.bodies[i] == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "max-age=30")
		_, _ = w.Write(a.bodies[i])
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *raceAgent) open(i int) { close(a.gates[i]) }

// Two workers (two Fetchers, two NATS connections) race on one stale lease
// in a JetStream bucket: both fetch, and the first to answer records its
// result in one compare-and-set. The loser's compare-and-set fails; it
// uses the winner's record when that holds its card, else advances from
// the winner's record so that the window keeps both digests (a replica
// serving the old card every other request is split brain). Each fetch writes the lease at most once,
// and card.observed is decided once per change by the write that records
// it. Failures race the same way: one backoff.
func TestObserveRaceTwoWorkers(t *testing.T) {
	cardA, cardB, cardC := cardJSON("1", true), cardJSON("2", true), cardJSON("3", true)
	digest := func(b []byte) string {
		d, err := detector.Digest(b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name           string
		winner, loser  []byte // what the first and the second answer serve
		writes         int    // lease revisions the race adds
		reports        int    // card.observed decisions
		window         []string
		loserFromLease bool // the loser returns the winner's record
	}{
		{"the same new card", cardB, cardB, 1, 1, []string{digest(cardA), digest(cardB)}, true},
		{"the same card again", cardA, cardA, 1, 0, []string{digest(cardA)}, true},
		{"two new cards", cardB, cardC, 2, 2, []string{digest(cardA), digest(cardB), digest(cardC)}, false},
		{"the loser saw the old card", cardB, cardA, 2, 2, []string{digest(cardA), digest(cardB)}, false},
		{"both fail", nil, nil, 1, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, js := natstest.StartJetStream(t)
			kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "leases", History: 64})
			if err != nil {
				t.Fatal(err)
			}
			a := newRaceAgent(t, cardA, tc.winner, tc.loser)
			a.open(0) // the first lease
			url := a.srv.URL + "/.well-known/agent-card.json"
			key := store.EncodeKey(url)
			clk := newClock()
			cards := memstore.NewCards()
			var reports atomic.Int64
			var w [2]*Fetcher
			var leases [2]*countedLeases
			for i := range w {
				nc, err := nats.Connect(srv.ClientURL())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				js2, err := jetstream.New(nc)
				if err != nil {
					t.Fatal(err)
				}
				kv2, err := js2.KeyValue(t.Context(), "leases")
				if err != nil {
					t.Fatal(err)
				}
				leases[i] = &countedLeases{KVLeases: store.NewKVLeases(kv2)}
				o := testOptions(clk)
				o.Leases, o.Cards = leases[i], cards
				o.OnFetch = func(obs Observation, err error) {
					if err == nil && obs.Fetches > 0 {
						reports.Add(1)
					}
				}
				w[i] = newFetcher(t, o)
			}
			ctx := context.Background()
			if _, err := w[0].Observe(ctx, url, false); err != nil {
				t.Fatal(err)
			}
			<-a.arrived // the first lease's request
			before, err := kv.History(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			rev0, reports0, writes0 := before[len(before)-1].Revision(), reports.Load(), [2]int64{leases[0].writes.Load(), leases[1].writes.Load()}

			clk.Advance(31 * time.Second)
			type result struct {
				obs Observation
				err error
			}
			done := [2]chan result{make(chan result, 1), make(chan result, 1)}
			for i, f := range w {
				go func() {
					obs, err := f.Observe(ctx, url, false)
					done[i] <- result{obs, err}
				}()
			}
			// Both have read the lease and are fetching; the first answer
			// is recorded before the second is sent.
			<-a.arrived
			<-a.arrived
			a.open(1)
			natstest.Eventually(t, 10*time.Second, "the first answer is recorded", func() bool {
				e, err := kv.Get(ctx, key)
				return err == nil && e.Revision() > rev0
			})
			a.open(2)
			res := [2]result{<-done[0], <-done[1]}

			hist, err := kv.History(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(hist) - len(before); n != tc.writes {
				t.Errorf("lease revisions added by the race = %d, want %d", n, tc.writes)
			}
			for i := range leases {
				if n := leases[i].writes.Load() - writes0[i]; n > 1 {
					t.Errorf("worker %d wrote the lease %d times for one fetch, want at most 1", i, n)
				}
			}
			if n := reports.Load() - reports0; n != int64(tc.reports) {
				t.Errorf("card.observed decisions = %d, want %d", n, tc.reports)
			}
			rec, _, err := leases[0].Get(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			if tc.winner == nil {
				for i, r := range res {
					fetchErr(t, r.err, ReasonStatus)
					_ = i
				}
				if rec.FailCount != 1 || rec.FailReason != string(ReasonStatus) || rec.Digest != digest(cardA) {
					t.Errorf("lease after the failure race = %+v, want one failure recorded over card A", rec)
				}
				return
			}
			var seen []string
			for _, s := range rec.Replicas.Window(clk.Now(), DefaultConsistencyWindow) {
				seen = append(seen, s.Digest)
			}
			if !slices.Equal(seen, tc.window) {
				t.Errorf("window = %v, want %v", seen, tc.window)
			}
			fromLease := 0
			for i, r := range res {
				if r.err != nil || r.obs.Card == nil {
					t.Fatalf("worker %d: %v", i, r.err)
				}
				if r.obs.FromLease {
					fromLease++
				}
			}
			if tc.loserFromLease {
				// Both return the recorded observation.
				if fromLease != 1 {
					t.Errorf("%d observations from the lease, want the loser's", fromLease)
				}
				for i, r := range res {
					if r.obs.Digest != rec.Digest || !r.obs.FetchedAt.Equal(rec.FetchedAt) || len(r.obs.Replicas.Seen) != len(rec.Replicas.Seen) {
						t.Errorf("worker %d: observation %s at %v (window %v); the record is %s at %v (%v)",
							i, r.obs.Digest, r.obs.FetchedAt, r.obs.Replicas.Seen, rec.Digest, rec.FetchedAt, rec.Replicas.Seen)
					}
				}
			} else if fromLease != 0 || res[0].obs.Digest == res[1].obs.Digest {
				t.Errorf("each worker returns what it fetched: digests %s, %s; %d from the lease", res[0].obs.Digest, res[1].obs.Digest, fromLease)
			}
		})
	}
}

// card.observed is decided on the lease that every worker shares: one when
// the card changes or comes back from a failure, else one per heartbeat
// counting the fetches since, whichever worker fetches.
func TestObserveReportsOnChangeOrHeartbeat(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=1")
	clk := newClock()
	o, _ := leasedOptions(clk)
	o.ObserveHeartbeat = 10 * time.Second
	var mu sync.Mutex
	var reports []Observation
	o.OnFetch = func(obs Observation, err error) {
		if err == nil && obs.Fetches > 0 {
			mu.Lock()
			reports = append(reports, obs)
			mu.Unlock()
		}
	}
	w := [2]*Fetcher{newFetcher(t, o), newFetcher(t, o)}
	url := a.url("/card")
	i := 0
	observe := func() error {
		_, err := w[i%2].Observe(context.Background(), url, false)
		i++
		return err
	}
	// want checks that the reports since the last call are these
	// (fetches, since).
	seen := 0
	want := func(step string, fetches ...any) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		got := reports[seen:]
		seen = len(reports)
		if len(got) != len(fetches)/2 {
			t.Fatalf("%s: %d reports, want %d", step, len(got), len(fetches)/2)
		}
		for k, r := range got {
			if r.Fetches != fetches[2*k].(int) || !r.Since.Equal(fetches[2*k+1].(time.Time)) {
				t.Fatalf("%s: report %d stands for %d fetches since %v, want %v since %v", step, k, r.Fetches, r.Since, fetches[2*k], fetches[2*k+1])
			}
		}
	}
	t0 := clk.Now()
	if err := observe(); err != nil {
		t.Fatal(err)
	}
	want("first fetch", 1, t0)
	for range 4 { // 304s at +2s … +8s: nothing new, no heartbeat yet
		clk.Advance(2 * time.Second)
		if err := observe(); err != nil {
			t.Fatal(err)
		}
	}
	want("revalidations")
	clk.Advance(2 * time.Second) // +10s: the heartbeat is due
	if err := observe(); err != nil {
		t.Fatal(err)
	}
	want("heartbeat", 5, t0.Add(2*time.Second))

	a.set(cardJSON("2", true), `"v2"`, "max-age=1")
	clk.Advance(2 * time.Second)
	if err := observe(); err != nil {
		t.Fatal(err)
	}
	want("changed card", 1, clk.Now())

	up := a.srv.Config.Handler
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	clk.Advance(2 * time.Second)
	fetchErr(t, observe(), ReasonStatus)
	a.srv.Config.Handler = up
	clk.Advance(2 * time.Second)
	if err := observe(); err != nil {
		t.Fatal(err)
	}
	want("back from a failure", 1, clk.Now())
}

// A card re-signed with the same content keeps its digest; its new body is
// a new signer, reported at once. The same signed body fetched again in
// full (no ETag) is nothing new: no report and no second lease write.
func TestObserveReportsSignerChange(t *testing.T) {
	signed := func(sig string) []byte {
		c := cardJSON("1", true)
		return append(c[:len(c)-1], fmt.Sprintf(`,"signatures":[{"protected":%q,"signature":"c2ln"}]}`, sig)...)
	}
	a := newAgent(t, signed("eyJhbGciOiJFUzI1NiJ9"), "", "max-age=1")
	clk := newClock()
	o, leases := leasedOptions(clk)
	var reports []Observation
	o.OnFetch = func(obs Observation, err error) {
		if err == nil && obs.Fetches > 0 {
			reports = append(reports, obs)
		}
	}
	f := newFetcher(t, o)
	url := a.url("/card")
	observe := func() {
		t.Helper()
		clk.Advance(2 * time.Second)
		if _, err := f.Observe(context.Background(), url, false); err != nil {
			t.Fatal(err)
		}
	}
	observe()
	_, rev, _ := leases.Get(context.Background(), url)
	observe()
	if _, again, _ := leases.Get(context.Background(), url); len(reports) != 1 || again != rev+1 {
		t.Fatalf("the same signed body again: %d reports, lease revision %d after %d; want 1 report, one write", len(reports), again, rev)
	}
	a.set(signed("eyJhbGciOiJFUzI1NiIsImtpZCI6ImsyIn0"), "", "max-age=1")
	observe()
	if len(reports) != 2 || reports[1].Digest != reports[0].Digest {
		t.Fatalf("re-signed card: %d reports (digests %v); want a second report of the same digest", len(reports), reports)
	}
}

// A negative heartbeat reports every fetch, as contract v1.2 did.
func TestObserveHeartbeatNegativeReportsEveryFetch(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=1")
	clk := newClock()
	o := testOptions(clk)
	o.ObserveHeartbeat = -1
	var reports atomic.Int64
	o.OnFetch = func(obs Observation, err error) {
		if err == nil && obs.Fetches == 1 && obs.Since.Equal(obs.FetchedAt) {
			reports.Add(1)
		}
	}
	f := newFetcher(t, o)
	for range 3 {
		if _, err := f.Observe(context.Background(), a.url("/card"), false); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Second)
	}
	if n := reports.Load(); n != 3 {
		t.Errorf("%d fetches reported, want 3", n)
	}
}

func TestObserveLeaseClamping(t *testing.T) {
	tests := []struct {
		name, cacheControl, age string
		want                    time.Duration
	}{
		{"max-age", "max-age=60", "", time.Minute},
		{"max-age minus Age", "public, max-age=60", "45", 15 * time.Second},
		{"Age beyond max-age", "max-age=60", "600", 2 * time.Second},
		{"max-age=0", "max-age=0", "", 2 * time.Second},
		{"no-cache", "no-cache", "", 2 * time.Second},
		{"no-store beats max-age", "max-age=60, no-store", "", 2 * time.Second},
		{"above MaxLease", "max-age=86400", "", 10 * time.Minute},
		{"huge", "max-age=99999999999999999999", "", 10 * time.Minute},
		{"absent", "", "", 45 * time.Second},
		{"no max-age", "public", "", 45 * time.Second},
		{"malformed max-age", "max-age=soon", "", 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.cacheControl != "" {
					w.Header().Set("Cache-Control", tc.cacheControl)
				}
				if tc.age != "" {
					w.Header().Set("Age", tc.age)
				}
				_, _ = w.Write(cardJSON("1", false))
			}))
			defer srv.Close()
			o := testOptions(newClock())
			o.MinLease, o.MaxLease, o.DefaultLease = 2*time.Second, 10*time.Minute, 45*time.Second
			f := newFetcher(t, o)
			obs, err := f.Observe(context.Background(), srv.URL, false)
			if err != nil {
				t.Fatal(err)
			}
			if obs.MaxAge != tc.want {
				t.Errorf("MaxAge for %q (Age %q) = %v, want %v", tc.cacheControl, tc.age, obs.MaxAge, tc.want)
			}
		})
	}
}

// The ETag is derived from the version only: a periodic unconditional fetch
// catches the body that changed behind it.
func TestObserveFullFetchIntervalCatchesChangeBehindETag(t *testing.T) {
	a := newAgent(t, cardJSON("1.0", true), `"1.0"`, "max-age=10")
	clk := newClock()
	o := testOptions(clk)
	o.FullFetchInterval = time.Minute
	f := newFetcher(t, o)
	ctx := context.Background()
	url := a.url("/card")

	first, err := f.Observe(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	// Streaming disabled, version (and so ETag) unchanged.
	a.set(cardJSON("1.0", false), `"1.0"`, "max-age=10")

	clk.Advance(30 * time.Second)
	hidden, err := f.Observe(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	if hidden.Status != 304 || hidden.Digest != first.Digest {
		t.Fatalf("before the interval: Status %d Digest %q, want a 304 with the old digest", hidden.Status, hidden.Digest)
	}

	clk.Advance(31 * time.Second) // a minute since the last full fetch
	full, err := f.Observe(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	if full.Status != 200 || !full.Full || full.Digest == first.Digest || full.Card.Capabilities.Streaming {
		t.Fatalf("after the interval: Status %d Full %t Digest %q Streaming %t; want the new card",
			full.Status, full.Full, full.Digest, full.Card.Capabilities.Streaming)
	}
	if inm := a.lastHeaders().Get("If-None-Match"); inm != "" {
		t.Errorf("full fetch sent If-None-Match %q", inm)
	}
	if cc := a.lastHeaders().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("full fetch Cache-Control = %q, want no-cache", cc)
	}
}

// force bypasses both the fresh lease and the ETag.
func TestObserveForceBypassesLeaseAndETag(t *testing.T) {
	a := newAgent(t, cardJSON("1.0", true), `"1.0"`, "max-age=300")
	clk := newClock()
	f := newFetcher(t, testOptions(clk))
	ctx := context.Background()
	url := a.url("/card")

	first, err := f.Observe(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	a.set(cardJSON("1.0", false, "summarize", "translate"), `"1.0"`, "max-age=300")
	clk.Advance(time.Second)

	stale, err := f.Observe(ctx, url, false)
	if err != nil || !stale.FromLease || stale.Digest != first.Digest {
		t.Fatalf("unforced within lease: FromLease %t digest %q err %v", stale.FromLease, stale.Digest, err)
	}
	forced, err := f.Observe(ctx, url, true)
	if err != nil {
		t.Fatal(err)
	}
	if forced.Status != 200 || !forced.Full || forced.FromLease || forced.Digest == first.Digest {
		t.Fatalf("forced: Status %d Full %t FromLease %t Digest %q", forced.Status, forced.Full, forced.FromLease, forced.Digest)
	}
	if _, ok := forced.Card.Skill("translate"); !ok {
		t.Errorf("forced card lacks the new skill")
	}
	a.wantRequests(t, 2)
	// The forced fetch renewed the lease for everyone.
	after, err := f.Observe(ctx, url, false)
	if err != nil || after.Digest != forced.Digest || !after.FromLease {
		t.Errorf("after force: digest %q FromLease %t err %v", after.Digest, after.FromLease, err)
	}
}

// 100 tasks with evidence of drift at once, on 3 workers, cost at most
// one fetch per worker, and each fetch at most one lease write.
func TestObserveForcedBurstCostsOneFetchPerWorker(t *testing.T) {
	forEachStore(t, testForcedBurst)
}

func testForcedBurst(t *testing.T, leases store.Leases, cards store.Cards) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=300")
	var fetchers []*Fetcher
	for range 3 {
		o := testOptions(nil) // real clock: force compares request and fetch times
		o.Leases, o.Cards = leases, cards
		fetchers = append(fetchers, newFetcher(t, o))
	}
	url := a.url("/card")
	if _, err := fetchers[0].Observe(context.Background(), url, false); err != nil {
		t.Fatal(err)
	}
	burst := func(name string) {
		t.Helper()
		req0, rev0 := a.requests.Load(), leaseRev(t, leases, url)
		// The forced fetch is held until every caller has asked: a force asked
		// after a full fetch completed rightly costs another one.
		release := a.hold()
		var wg sync.WaitGroup
		var asked sync.WaitGroup
		errs := make(chan error, 100)
		for i := range 100 {
			asked.Add(1)
			wg.Go(func() {
				asked.Done()
				obs, err := fetchers[i%3].Observe(context.Background(), url, true)
				if err == nil && obs.Card == nil {
					err = errors.New("no card")
				}
				errs <- err
			})
		}
		asked.Wait()
		time.Sleep(100 * time.Millisecond) // let the last callers take their request time
		release()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		req, writes := a.requests.Load()-req0, leaseRev(t, leases, url)-rev0
		if req < 1 || req > 3 {
			t.Fatalf("%s: %d requests for 100 forced callers on 3 workers, want 1 to 3", name, req)
		}
		if writes < 1 || writes > uint64(req) {
			t.Fatalf("%s: %d lease writes for %d fetches, want 1 to %d", name, writes, req, req)
		}
	}
	burst("one forced burst")
	if a.conditional.Load() != 0 {
		t.Errorf("a forced fetch was conditional")
	}
	// A later burst is new evidence: it fetches again.
	burst("a second forced burst")
}

// A forced caller arriving during a revalidation does not take its 304: it gets
// the unconditional fetch queued behind it.
func TestObserveForceQueuedBehindRevalidation(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=0")
	o := testOptions(nil)
	o.MinLease = -1
	f := newFetcher(t, o)
	ctx := context.Background()
	url := a.url("/card")
	if _, err := f.Observe(ctx, url, false); err != nil {
		t.Fatal(err)
	}
	a.setDelay(200 * time.Millisecond)
	reval := make(chan Observation, 1)
	revalErr := make(chan error, 1)
	go func() {
		obs, err := f.Observe(ctx, url, false)
		reval <- obs
		revalErr <- err
	}()
	a.waitInFlight(t, revalErr)
	a.set(cardJSON("1", false), `"v1"`, "max-age=0") // changed behind the ETag
	forced, err := f.Observe(ctx, url, true)
	if err != nil {
		t.Fatal(err)
	}
	if r := <-reval; r.Status != 304 {
		t.Errorf("revalidation status = %d, want 304", r.Status)
	}
	if forced.Status != 200 || forced.Card.Capabilities.Streaming {
		t.Errorf("forced: Status %d streaming %t; want 200 with the new card", forced.Status, forced.Card.Capabilities.Streaming)
	}
	a.wantRequests(t, 3)
}

// A caller whose context ends leaves; the shared fetch completes for others.
func TestObserveWaiterLeavesOnCancel(t *testing.T) {
	a, f, url := slowFlight(t, 300*time.Millisecond)

	done := make(chan error, 1)
	go func() {
		_, err := f.Observe(context.Background(), url, false)
		done <- err
	}()
	a.waitInFlight(t, done)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.Observe(ctx, url, false)
	fetchErr(t, err, ReasonTimeout)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("leaving took %v", el)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = f.Observe(ctx2, url, false)
	fetchErr(t, err, ReasonCanceled)

	if err := <-done; err != nil {
		t.Fatalf("the shared fetch failed: %v", err)
	}
	a.wantRequests(t, 1)
}

// The first caller's context does not bound the shared fetch.
func TestObserveFlightOutlivesFirstCaller(t *testing.T) {
	a, f, url := slowFlight(t, 150*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Observe(ctx, url, false); err == nil {
		t.Fatal("first caller: want its own timeout")
	}
	obs, err := f.Observe(context.Background(), url, false)
	if err != nil || obs.Card == nil {
		t.Fatalf("second caller: %v", err)
	}
	if got := a.requests.Load(); got != 1 {
		t.Errorf("requests = %d, want 1 (the second caller joined the first flight)", got)
	}
}

func TestObserveAgentFallsBackToLegacyPath(t *testing.T) {
	var modern, legacy atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/agents/a" + WellKnownPath:
			modern.Add(1)
			http.NotFound(w, r)
		case "/agents/a" + LegacyWellKnownPath:
			legacy.Add(1)
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(cardJSON("0.2", false))
		default:
			http.Error(w, "unexpected", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	o := testOptions(newClock())
	o.MinLease = -1
	f := newFetcher(t, o)
	ctx := context.Background()

	for i := range 3 {
		obs, err := f.ObserveAgent(ctx, srv.URL+"/agents/a/", "", false)
		if err != nil {
			t.Fatalf("ObserveAgent %d: %v", i, err)
		}
		if want := srv.URL + "/agents/a" + LegacyWellKnownPath; obs.CardURL != want {
			t.Fatalf("CardURL = %q, want %q", obs.CardURL, want)
		}
	}
	if modern.Load() != 1 || legacy.Load() != 3 {
		t.Errorf("agent-card.json hits %d, agent.json hits %d; want 1 and 3 (legacy remembered)", modern.Load(), legacy.Load())
	}

	// An explicit card URL is used as is; a 500 is not a reason to fall back.
	_, err := f.ObserveAgent(ctx, srv.URL, srv.URL+"/elsewhere", false)
	fe := fetchErr(t, err, ReasonStatus)
	if fe.Status != http.StatusTeapot {
		t.Errorf("Status = %d, want 418", fe.Status)
	}
}

func TestCardURLs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"https://a.example", []string{"https://a.example/.well-known/agent-card.json", "https://a.example/.well-known/agent.json"}},
		{"https://a.example/", []string{"https://a.example/.well-known/agent-card.json", "https://a.example/.well-known/agent.json"}},
		{"https://a.example/x/?q=1#f", []string{"https://a.example/x/.well-known/agent-card.json", "https://a.example/x/.well-known/agent.json"}},
		{"http://a.example:8080/.well-known/agent.json", []string{"http://a.example:8080/.well-known/agent.json"}},
	}
	for _, tc := range tests {
		got, err := CardURLs(tc.in)
		if err != nil || len(got) != len(tc.want) || got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("CardURLs(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "ftp://a.example/", "/relative", "https://", "://x"} {
		_, err := CardURLs(bad)
		fetchErr(t, err, ReasonInvalidURL)
	}
}

func TestObservePerHostConcurrency(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), "", "max-age=60")
	a.setDelay(50 * time.Millisecond)
	o := testOptions(newClock())
	o.PerHostConcurrency = 2
	f := newFetcher(t, o)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := f.Observe(context.Background(), a.url("/card/"+string(rune('a'+i))), false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := a.maxInFlight.Load(); got > 2 {
		t.Errorf("max concurrent requests to one host = %d, want <= 2", got)
	}
	a.wantRequests(t, 8)
	if n := len(f.hosts.hosts); n != 0 {
		t.Errorf("host limiter keeps %d idle entries", n)
	}
}

// A lease the previous version wrote with a claim on it (held for an hour
// by a worker that crashed, as the result it expected) is a lease like
// any other: a stale one is fetched at once, not waited for, and the
// record left has no claim.
func TestObserveIgnoresClaimOfPreviousVersion(t *testing.T) {
	_, _, js := natstest.StartJetStream(t)
	leases := kvLeases(t, js)
	kv, err := js.KeyValue(t.Context(), "leases")
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=60")
	url := a.url("/card")
	clk := newClock()
	o := testOptions(clk)
	o.Leases = leases
	f := newFetcher(t, o)
	old := fmt.Sprintf(`{"cardUrl":%q,"digest":"sha256:%s","etag":"\"v0\"","maxAge":60000000000,`+
		`"fetchedAt":%q,"lastFullFetch":%q,"holder":"crashed","heldUntil":%q,"confirming":true}`,
		url, strings.Repeat("ab", 32), clk.Now().Add(-time.Hour).Format(time.RFC3339Nano),
		clk.Now().Add(-time.Hour).Format(time.RFC3339Nano), clk.Now().Add(time.Hour).Format(time.RFC3339Nano))
	if _, err := kv.Put(t.Context(), store.EncodeKey(url), []byte(old)); err != nil {
		t.Fatal(err)
	}
	obs, err := f.Observe(context.Background(), url, false)
	if err != nil || obs.Card == nil || obs.Status != 200 {
		t.Fatalf("Observe over the old claim = status %d, %v; want a 200", obs.Status, err)
	}
	a.wantRequests(t, 1)
	e, err := kv.Get(t.Context(), store.EncodeKey(url))
	if err != nil {
		t.Fatal(err)
	}
	if v := string(e.Value()); strings.Contains(v, "holder") || strings.Contains(v, "heldUntil") || strings.Contains(v, "confirming") || !strings.Contains(v, obs.Digest) {
		t.Errorf("lease recorded over the old claim = %s; want the fetch's, without a claim", v)
	}
}

// A failed fetch writes the lease once (its backoff) and keeps the previous
// observation.
func TestObserveFailureKeepsLease(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=10")
	clk := newClock()
	o, leases := leasedOptions(clk)
	var failures atomic.Int64
	o.OnFetch = func(obs Observation, err error) {
		if err != nil {
			failures.Add(1)
		}
	}
	f := newFetcher(t, o)
	url := a.url("/card")
	first, err := f.Observe(context.Background(), url, false)
	if err != nil {
		t.Fatal(err)
	}
	rev := leaseRev(t, leases, url)
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	clk.Advance(11 * time.Second)
	_, err = f.Observe(context.Background(), url, false)
	if fe := fetchErr(t, err, ReasonStatus); fe.Status != 503 {
		t.Errorf("Status = %d", fe.Status)
	}
	l, again, _ := leases.Get(context.Background(), url)
	if l.Digest != first.Digest || l.FailCount != 1 || again != rev+1 {
		t.Errorf("lease after a failed fetch = %+v at revision %d after %d; want the old digest, one failure, one write", l, again, rev)
	}
	if failures.Load() != 1 {
		t.Errorf("OnFetch failures = %d, want 1", failures.Load())
	}
}

func TestCloseCancelsFlights(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), "", "")
	a.setDelay(5 * time.Second)
	f, err := New(testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.Observe(context.Background(), a.url("/card"), false)
		done <- err
	}()
	a.waitInFlight(t, done)
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("Close took %v", el)
	}
	err = <-done
	fetchErr(t, err, ReasonCanceled)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("error %v does not wrap ErrClosed", err)
	}
	_, err = f.Observe(context.Background(), a.url("/card"), false)
	fetchErr(t, err, ReasonCanceled)
}

// A 304 without Cache-Control keeps the lease the 200 set (RFC 9111 §4.3.4);
// one with Cache-Control replaces it.
func TestObserve304LeaseHeaders(t *testing.T) {
	var cc304 atomic.Value
	cc304.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			if cc := cc304.Load().(string); cc != "" {
				w.Header().Set("Cache-Control", cc)
			}
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Cache-Control", "max-age=120")
		_, _ = w.Write(cardJSON("1", true))
	}))
	defer srv.Close()
	clk := newClock()
	f := newFetcher(t, testOptions(clk))
	ctx := context.Background()

	if _, err := f.Observe(ctx, srv.URL, false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(121 * time.Second)
	obs, err := f.Observe(ctx, srv.URL, false)
	if err != nil || obs.Status != 304 || obs.MaxAge != 120*time.Second {
		t.Fatalf("304 without Cache-Control: Status %d MaxAge %v err %v; want 304, 2m0s", obs.Status, obs.MaxAge, err)
	}
	cc304.Store("max-age=30")
	clk.Advance(121 * time.Second)
	obs, err = f.Observe(ctx, srv.URL, false)
	if err != nil || obs.Status != 304 || obs.MaxAge != 30*time.Second {
		t.Fatalf("304 with max-age=30: Status %d MaxAge %v err %v; want 304, 30s", obs.Status, obs.MaxAge, err)
	}
}

func TestCanonicalURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"HTTPS://Agent.Example:443/Card?x=1#frag", "https://agent.example/Card?x=1"},
		{"http://agent.example:80", "http://agent.example/"},
		{"http://agent.example:8080/a", "http://agent.example:8080/a"},
		{"http://[::1]:80/", "http://[::1]/"},
		{"http://[FE80::1]:8443/x", "http://[fe80::1]:8443/x"},
	}
	for _, tc := range tests {
		if got, err := CanonicalURL(tc.in); err != nil || got != tc.want {
			t.Errorf("CanonicalURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// Two spellings share one lease.
	a := newAgent(t, cardJSON("1", true), "", "max-age=60")
	f := newFetcher(t, testOptions(newClock()))
	host := strings.Replace(a.srv.URL, "http://", "HTTP://", 1)
	for _, u := range []string{a.srv.URL, host + "/", a.srv.URL + "/#x"} {
		obs, err := f.Observe(context.Background(), u, false)
		if err != nil || obs.CardURL != a.srv.URL+"/" {
			t.Fatalf("Observe(%q): CardURL %q err %v", u, obs.CardURL, err)
		}
	}
	a.wantRequests(t, 1)
}

// FuzzCanonicalURL: canonicalisation is idempotent and keeps URLs fetchable.
func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{"HTTPS://A.example:443/x?y#z", "http://[::1]:80", "http://a/%2F?q", "http://user:pw@h:8/p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := CanonicalURL(raw)
		if err != nil {
			fetchErr(t, err, ReasonInvalidURL)
			return
		}
		again, err := CanonicalURL(c)
		if err != nil || again != c {
			t.Fatalf("CanonicalURL(%q) = %q, then %q, %v", raw, c, again, err)
		}
	})
}

// TestObserveFailureIsShared: a failed fetch is recorded on the lease; until
// its backoff ends every worker (another Fetcher on the same leases) gets
// the same failure without a request, forced or not; then one worker tries
// again, and a success clears the failure.
func TestObserveFailureIsShared(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=10")
	clk := newClock()
	o, leases := leasedOptions(clk)
	w1, w2 := newFetcher(t, o), newFetcher(t, o)
	url := a.url("/card")
	if _, err := w1.Observe(context.Background(), url, false); err != nil {
		t.Fatal(err)
	}
	up := a.srv.Config.Handler
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	clk.Advance(11 * time.Second)
	before := a.requests.Load()
	_, err := w1.Observe(context.Background(), url, false)
	fetchErr(t, err, ReasonStatus)
	if got := a.requests.Load() - before; got != 1 {
		t.Fatalf("first failing observation made %d requests, want 1", got)
	}
	for i, w := range []*Fetcher{w2, w1, w2} {
		_, err := w.Observe(context.Background(), url, i == 2)
		if fe := fetchErr(t, err, ReasonStatus); fe.Status != 503 {
			t.Errorf("shared failure Status = %d, want 503", fe.Status)
		}
	}
	if got := a.requests.Load() - before; got != 1 {
		t.Fatalf("%d requests while the failure is backed off, want 1 in all", got)
	}
	l, _, _ := leases.Get(context.Background(), url)
	if l.FailCount != 1 || l.FailReason != string(ReasonStatus) || !l.RetryAt.After(clk.Now()) || l.Digest == "" {
		t.Fatalf("lease after the failure = %+v", l)
	}

	// After the backoff (the agent's 10 s lease) the next observation
	// fetches again; the agent is back, and the failure is cleared.
	a.srv.Config.Handler = up
	clk.Advance(11 * time.Second)
	if _, err := w2.Observe(context.Background(), url, false); err != nil {
		t.Fatalf("observation after the backoff: %v", err)
	}
	l, _, _ = leases.Get(context.Background(), url)
	if l.FailReason != "" || l.FailCount != 0 || !l.RetryAt.IsZero() {
		t.Fatalf("a success did not clear the failure: %+v", l)
	}
}

// TestObserveFailureBackoffGrows: failures in a row double the backoff.
func TestObserveFailureBackoffGrows(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), "", "")
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	})
	clk := newClock()
	o, leases := leasedOptions(clk)
	o.MinLease, o.MaxLease = 2*time.Second, time.Minute
	f := newFetcher(t, o)
	url := a.url("/card")
	var waits []time.Duration
	for range 4 {
		_, err := f.Observe(context.Background(), url, false)
		fetchErr(t, err, ReasonStatus)
		l, _, _ := leases.Get(context.Background(), url)
		waits = append(waits, l.RetryAt.Sub(l.FailedAt))
		clk.Advance(l.RetryAt.Sub(clk.Now()))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("backoffs = %v, want %v", waits, want)
		}
	}
}

// An agent that serves its card without an ETag answers every
// revalidation with the whole body: the same bytes are digested, not
// parsed again, and the observation is the first one's card. Other bytes
// of the same digest (whitespace) are parsed: the cache reuses a parse
// only for the bytes it came from.
func TestUnchangedBodyWithoutETagIsNotParsedAgain(t *testing.T) {
	body := cardJSON("1", true)
	a := newAgent(t, body, "", "max-age=10")
	clk := newClock()
	f := newFetcher(t, testOptions(clk))
	parses := countParses(f)
	url := a.url("/card")
	first, later := revalidate(t, f, clk, url, 3)
	for i, obs := range later {
		if obs.Status != 200 || obs.Digest != first.Digest || obs.Fingerprint != first.Fingerprint || obs.Card != first.Card {
			t.Fatalf("revalidation %d: status %d digest %q card %p, want 200 %q %p", i, obs.Status, obs.Digest, obs.Card, first.Digest, first.Card)
		}
	}
	if got := parses.Load(); got != 1 {
		t.Fatalf("parses = %d after 4 fetches of one body, want 1", got)
	}

	spaced := append([]byte(" "), body...)
	a.set(spaced, "", "max-age=10")
	clk.Advance(11 * time.Second)
	obs, err := f.Observe(t.Context(), url, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := parses.Load(); got != 2 {
		t.Fatalf("parses = %d after a body with other bytes, want 2", got)
	}
	if obs.Digest != first.Digest || string(obs.Card.Raw) != string(spaced) {
		t.Fatalf("re-spaced body: digest %q raw %q, want %q and the new bytes", obs.Digest, obs.Card.Raw, first.Digest)
	}
}

// Every fetch, by any worker, puts its digest in the lease's window, so the
// window is the agent's, not one worker's: two fetchers taking turns over
// one shared lease see an alternation between two cards as split brain, a
// rolling deploy (A→B, never back) and a single flip and back as not.
func TestObserveKeepsTheReplicaWindow(t *testing.T) {
	forEachStore(t, func(t *testing.T, leases store.Leases, cards store.Cards) {
		a, b := cardJSON("1", true), cardJSON("1", false)
		for _, tc := range []struct {
			name  string
			seq   [][]byte
			split bool
		}{
			{"split brain", [][]byte{a, b, a, b, a}, true},
			{"rolling deploy", [][]byte{a, a, b, b, b}, false},
			{"single flip and back", [][]byte{a, b, b, a, a}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ag := newAgent(t, a, "", "no-cache")
				clk := newClock()
				var fs []*Fetcher
				for range 2 {
					o := testOptions(clk)
					o.Leases, o.Cards, o.MinLease = leases, cards, -1
					fs = append(fs, newFetcher(t, o))
				}
				url := ag.url("/.well-known/agent-card.json" + "?" + tc.name[:5])
				var obs Observation
				for i, body := range tc.seq {
					ag.set(body, "", "no-cache")
					clk.Advance(time.Second)
					var err error
					if obs, err = fs[i%2].Observe(context.Background(), url, false); err != nil {
						t.Fatal(err)
					}
				}
				if got := obs.Replicas.Disagree(clk.Now(), obs.Window); got != tc.split {
					t.Errorf("split brain = %v, want %v (window %+v)", got, tc.split, obs.Replicas)
				}
				if obs.Window != DefaultConsistencyWindow {
					t.Errorf("Window = %v, want the default %v", obs.Window, DefaultConsistencyWindow)
				}
				lease, _, err := leases.Get(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				if lease.Replicas.Since != obs.Replicas.Since || len(lease.Replicas.Seen) != 2 {
					t.Errorf("lease window %+v, observation's %+v", lease.Replicas, obs.Replicas)
				}
				if tc.split {
					// Marked once, by whichever worker; an episode that is
					// not the lease's is left alone.
					if err := fs[1].MarkInconsistent(context.Background(), url, lease.Replicas.Since.Add(time.Second)); err != nil {
						t.Fatal(err)
					}
					if err := fs[0].MarkInconsistent(context.Background(), url, lease.Replicas.Since); err != nil {
						t.Fatal(err)
					}
					lease, _, _ = leases.Get(context.Background(), url)
					if !lease.Replicas.Reported {
						t.Errorf("episode not marked reported: %+v", lease.Replicas)
					}
					// A fresh lease serves the window without fetching.
					o := testOptions(clk)
					o.Leases, o.Cards = leases, cards
					hit, err := newFetcher(t, o).Observe(context.Background(), url, false)
					if err != nil || !hit.Replicas.Reported {
						t.Errorf("observation from the lease = %+v, %v", hit.Replicas, err)
					}
				}
				if tc.name == "rolling deploy" && !lease.ChangedAt.Equal(clk.Now().Add(-2*time.Second)) {
					t.Errorf("ChangedAt = %v, want the first fetch of B (%v)", lease.ChangedAt, clk.Now().Add(-2*time.Second))
				}
			})
		}
	})
}

// refusingCards is a store.Cards whose Put fails while refuse is set (a
// store that is full, or too slow for StoreTimeout).
type refusingCards struct {
	*memCards
	refuse atomic.Bool
	puts   atomic.Int64
}

var errFull = errors.New("insufficient storage")

func (c *refusingCards) Put(ctx context.Context, digest string, raw []byte) error {
	c.puts.Add(1)
	if c.refuse.Load() {
		return errFull
	}
	return c.memCards.Put(ctx, digest, raw)
}

// An observation whose body could not be stored is not returned: a pin, a
// lease or a card.drift that named its digest would promise a body no
// reader finds (a later transition would judge the pin pinned-card-unknown,
// replay could not re-evaluate). Observe fails with ErrStore, the lease is
// not advanced to the digest, OnStoreError and OnFetch hear of it, and once
// the store takes writes again the next Observe stores the body and leases
// it.
func TestObserveFailsWhenTheBodyIsNotStored(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=60")
	o, leases := leasedOptions(newClock())
	cards := &refusingCards{memCards: newMemCards()}
	o.Cards = cards
	var storeErrs, fetches atomic.Int64
	o.OnStoreError = func(err error) {
		if !errors.Is(err, ErrStore) || !errors.Is(err, errFull) {
			t.Errorf("OnStoreError(%v): want ErrStore wrapping the store's error", err)
		}
		storeErrs.Add(1)
	}
	o.OnFetch = func(Observation, error) { fetches.Add(1) }
	f := newFetcher(t, o)
	url := a.url("/card")
	ctx := context.Background()

	cards.refuse.Store(true)
	obs, err := f.Observe(ctx, url, false)
	if !errors.Is(err, ErrStore) || !errors.Is(err, errFull) {
		t.Fatalf("Observe with the card store refusing = (%q, %v), want an ErrStore error", obs.Digest, err)
	}
	if obs.Digest != "" || obs.Card != nil {
		t.Errorf("Observe returned an observation (%q) with its error", obs.Digest)
	}
	if storeErrs.Load() != 1 || fetches.Load() != 1 {
		t.Errorf("OnStoreError calls %d, OnFetch calls %d; want 1 and 1", storeErrs.Load(), fetches.Load())
	}
	if l, _, err := leases.Get(ctx, url); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lease after the refused body = %+v, %v; want none (nothing written)", l, err)
	}

	cards.refuse.Store(false)
	obs, err = f.Observe(ctx, url, false)
	if err != nil {
		t.Fatalf("Observe once the store takes writes: %v", err)
	}
	if _, err := cards.Get(ctx, obs.Digest); err != nil {
		t.Errorf("body of the observed digest: %v, want it stored", err)
	}
	if l, _, _ := leases.Get(ctx, url); l.Digest != obs.Digest {
		t.Errorf("lease digest %q, want the observed %q", l.Digest, obs.Digest)
	}
	if got := a.requests.Load(); got != 2 {
		t.Errorf("agent requests = %d, want 2 (the refused observation was not leased)", got)
	}
}

// A fetch of the card its lease names writes no body again: the lease
// promises the body is stored (a KV create of a key that exists costs two
// round trips). A worker that finds that body missing stores it again with
// the fetch it makes for it.
func TestObserveStoresAKnownBodyOnce(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), "", "max-age=1")
	clk := newClock()
	o, _ := leasedOptions(clk)
	cards := &refusingCards{memCards: newMemCards()}
	o.Cards = cards
	f := newFetcher(t, o)
	url := a.url("/card")
	ctx := context.Background()
	var digest string
	for i := range 3 {
		clk.Advance(time.Duration(i) * time.Minute) // past the lease
		obs, err := f.Observe(ctx, url, false)
		if err != nil {
			t.Fatalf("Observe %d: %v", i, err)
		}
		digest = obs.Digest
	}
	if got := a.requests.Load(); got != 3 {
		t.Fatalf("agent requests = %d, want 3 (one per lease)", got)
	}
	if got := cards.puts.Load(); got != 1 {
		t.Errorf("body puts = %d, want 1 (the card the lease names is stored)", got)
	}

	cards.mu.Lock()
	delete(cards.m, digest)
	cards.mu.Unlock()
	other := newFetcher(t, o) // another worker: no body in its cache
	if _, err := other.Observe(ctx, url, false); err != nil {
		t.Fatalf("Observe by another worker: %v", err)
	}
	if _, err := cards.Get(ctx, digest); err != nil {
		t.Errorf("body after a worker found it missing: %v, want it stored again", err)
	}
	if got := a.requests.Load(); got != 4 {
		t.Errorf("agent requests = %d, want 4 (the missing body is fetched)", got)
	}
}

// kvLeases is a leases bucket on a fresh embedded JetStream.
func kvLeases(tb testing.TB, js jetstream.JetStream) *store.KVLeases {
	tb.Helper()
	kv, err := js.CreateKeyValue(tb.Context(), jetstream.KeyValueConfig{Bucket: "leases", History: 1})
	if err != nil {
		tb.Fatalf("CreateKeyValue: %v", err)
	}
	return store.NewKVLeases(kv)
}

// sharedLease is one agent serving its card with cacheControl and a counted
// leases bucket on a fresh embedded JetStream, for a test's workers to
// share; it returns the bucket, the agent and its card's URL.
func sharedLease(t *testing.T, cacheControl string) (*countedLeases, *agent, string) {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	a := newAgent(t, cardJSON("1", true), `"v1"`, cacheControl)
	return &countedLeases{KVLeases: kvLeases(t, js)}, a, a.url("/.well-known/agent-card.json")
}

// leaseWorker is a test Fetcher on clk sharing leases and cards with the
// test's other workers; lag, when not 0, is its LeaseCopyLag.
func leaseWorker(t *testing.T, clk *fakeClock, leases store.Leases, cards store.Cards, lag time.Duration) *Fetcher {
	t.Helper()
	o := testOptions(clk)
	o.Leases, o.Cards = leases, cards
	if lag != 0 {
		o.LeaseCopyLag = lag
	}
	return newFetcher(t, o)
}

// countedLeases counts the reads that reach the store and the writes that
// succeed.
type countedLeases struct {
	*store.KVLeases
	gets, writes atomic.Int64
}

func (c *countedLeases) Get(ctx context.Context, url string) (store.Lease, uint64, error) {
	c.gets.Add(1)
	return c.KVLeases.Get(ctx, url)
}

func (c *countedLeases) Create(ctx context.Context, l store.Lease) (uint64, error) {
	return c.wrote(c.KVLeases.Create(ctx, l))
}

func (c *countedLeases) Update(ctx context.Context, l store.Lease, rev uint64) (uint64, error) {
	return c.wrote(c.KVLeases.Update(ctx, l, rev))
}

func (c *countedLeases) wrote(rev uint64, err error) (uint64, error) {
	if err == nil {
		c.writes.Add(1)
	}
	return rev, err
}

// followCount counts what its Fetcher's copy is delivered: puts decoded,
// and puts it held already (its own writes, not decoded).
type followCount struct {
	*store.KVLeases
	decoded, known atomic.Int64
}

func (c *followCount) Follow(ctx context.Context, known func(string, uint64) bool) (store.LeaseFeed, error) {
	f, err := c.KVLeases.Follow(ctx, known)
	if err != nil {
		return nil, err
	}
	return countedFeed{LeaseFeed: f, c: c}, nil
}

type countedFeed struct {
	store.LeaseFeed
	c *followCount
}

func (f countedFeed) Next(ctx context.Context) (store.LeaseUpdate, error) {
	u, err := f.LeaseFeed.Next(ctx)
	switch {
	case err != nil || u.Current || u.Deleted:
	case u.Known:
		f.c.known.Add(1)
	default:
		f.c.decoded.Add(1)
	}
	return u, err
}

// copyHolds waits until f's copy is trusted and holds url at rev ≥ minRev.
func copyHolds(t *testing.T, f *Fetcher, url string, minRev uint64) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, "the copy holds "+url, func() bool {
		_, rev, ok := f.copy.get(store.EncodeKey(url))
		return ok && rev >= minRev
	})
}

// copiesStored waits until f's copy holds url's lease as stored in leases,
// and returns the stored revision.
func copiesStored(t *testing.T, f *Fetcher, leases *countedLeases, url string) uint64 {
	t.Helper()
	_, rev, err := leases.KVLeases.Get(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	copyHolds(t, f, url, rev)
	return rev
}

// A worker's copy is delivered its own lease writes too, but does not
// decode them: it holds them since it made them. Another worker's writes
// are decoded.
func TestLeaseCopySkipsOwnWrites(t *testing.T) {
	_, _, js := natstest.StartJetStream(t)
	kv := kvLeases(t, js)
	cards := memstore.NewCards()
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=10")
	url := a.url("/.well-known/agent-card.json")
	clk := newClock()
	counted := &followCount{KVLeases: kv}
	w, other := leaseWorker(t, clk, counted, cards, 0), leaseWorker(t, clk, kv, cards, 0)
	ctx := context.Background()
	observe := func(f *Fetcher) {
		t.Helper()
		if _, err := f.Observe(ctx, url, false); err != nil {
			t.Fatal(err)
		}
		delivered(t, w, kv)
		clk.Advance(11 * time.Second)
	}
	observe(w) // the first fetch starts the copy
	decoded0, known0 := counted.decoded.Load(), counted.known.Load()
	for range 5 {
		observe(w)
	}
	if d, k := counted.decoded.Load()-decoded0, counted.known.Load()-known0; d != 0 || k != 5 {
		t.Errorf("five own writes: %d decoded, %d known; want 0 and 5", d, k)
	}
	observe(other)
	if d := counted.decoded.Load() - decoded0; d != 1 {
		t.Errorf("another worker's write: %d decoded, want 1", d)
	}
}

// A lease another worker recorded reaches this worker's copy by the watch,
// and answers from there: no HTTP request and no store read.
func TestLeaseCopySeesOtherWorkersLease(t *testing.T) {
	leases, a, url := sharedLease(t, "max-age=60")
	cards := memstore.NewCards()
	clk := newClock()
	w1, w2 := leaseWorker(t, clk, leases, cards, 0), leaseWorker(t, clk, leases, cards, 0)
	// w2's watch starts with its first flight: an agent of its own.
	b := newAgent(t, cardJSON("2", true), `"v2"`, "max-age=60")
	if _, err := w2.Observe(t.Context(), b.url("/card.json"), false); err != nil {
		t.Fatal(err)
	}

	first, err := w1.Observe(t.Context(), url, false)
	if err != nil || first.Status != 200 {
		t.Fatalf("w1.Observe = status %d, %v; want a 200", first.Status, err)
	}
	copiesStored(t, w2, leases, url)
	gets := leases.gets.Load()
	got, err := w2.Observe(t.Context(), url, false)
	if err != nil || !got.FromLease || got.Digest != first.Digest {
		t.Fatalf("w2.Observe = FromLease %v digest %s, %v; want w1's lease %s", got.FromLease, got.Digest, err, first.Digest)
	}
	a.wantRequests(t, 1)
	if n := leases.gets.Load() - gets; n != 0 {
		t.Errorf("store reads for a copied fresh lease = %d, want 0", n)
	}
}

// heldFeed is a LeaseFollower over a real bucket whose watch can be paused
// (it delivers nothing) while Head reports what was delivered: a copy that
// trails the store yet believes itself current, the worst a lagging watch
// can do within LeaseCopyLag.
type heldFeed struct {
	*countedLeases
	mu       sync.Mutex
	paused   bool
	resume   chan struct{}
	lastRev  atomic.Uint64
	breakNow chan struct{}
	follows  atomic.Int64
}

func newHeldFeed(l *countedLeases) *heldFeed {
	return &heldFeed{countedLeases: l, resume: make(chan struct{}), breakNow: make(chan struct{}, 1)}
}

func (h *heldFeed) pause() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.paused {
		h.paused, h.resume = true, make(chan struct{})
	}
}

func (h *heldFeed) unpause() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.paused {
		h.paused = false
		close(h.resume)
	}
}

func (h *heldFeed) gate() (bool, chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.paused, h.resume
}

func (h *heldFeed) Follow(ctx context.Context, known func(string, uint64) bool) (store.LeaseFeed, error) {
	h.follows.Add(1)
	f, err := h.KVLeases.Follow(ctx, known)
	if err != nil {
		return nil, err
	}
	return &gatedFeed{h: h, f: f}, nil
}

func (h *heldFeed) Head(ctx context.Context) (uint64, error) {
	if paused, _ := h.gate(); paused {
		return h.lastRev.Load(), nil
	}
	return h.KVLeases.Head(ctx)
}

type gatedFeed struct {
	h *heldFeed
	f store.LeaseFeed
}

func (g *gatedFeed) Next(ctx context.Context) (store.LeaseUpdate, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var broke atomic.Bool
	go func() {
		select {
		case <-g.h.breakNow:
			broke.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	u, err := g.f.Next(ctx)
	if broke.Load() {
		return store.LeaseUpdate{}, store.ErrWatchClosed
	}
	for err == nil {
		paused, resume := g.h.gate()
		if !paused {
			break
		}
		select {
		case <-resume:
		case <-g.h.breakNow:
			return store.LeaseUpdate{}, store.ErrWatchClosed
		case <-ctx.Done():
			return store.LeaseUpdate{}, ctx.Err()
		}
	}
	if err == nil && u.Rev > 0 {
		g.h.lastRev.Store(max(g.h.lastRev.Load(), u.Rev))
	}
	select {
	case <-g.h.breakNow:
		return store.LeaseUpdate{}, store.ErrWatchClosed
	default:
	}
	return u, err
}

func (g *gatedFeed) Stop() error { return g.f.Stop() }

// A copy that trails the store shows a lease another worker renewed as
// stale: the worker fetches (once: at most one fetch per worker per
// lease), loses its compare-and-set on the revision it read, re-reads the
// store, and uses the lease the other worker recorded — no write of its
// own.
func TestLeaseCopyStaleLosesCASAndRecovers(t *testing.T) {
	leases, a, url := sharedLease(t, "max-age=30")
	held := newHeldFeed(leases)
	cards := memstore.NewCards()
	clk := newClock()
	w1 := leaseWorker(t, clk, leases, cards, 0)
	w2 := leaseWorker(t, clk, held, cards, time.Hour) // the paused copy stays trusted

	if _, err := w2.Observe(t.Context(), url, false); err != nil {
		t.Fatal(err)
	}
	a.wantRequests(t, 1)
	rev := copiesStored(t, w2, leases, url)

	// The lease expires; w1 renews it while w2's watch is paused.
	held.pause()
	clk.Advance(31 * time.Second)
	renewed, err := w1.Observe(t.Context(), url, false)
	if err != nil || renewed.Status != 304 {
		t.Fatalf("w1.Observe = status %d, %v; want a 304", renewed.Status, err)
	}
	a.wantRequests(t, 2)
	if _, stale, ok := w2.copy.get(store.EncodeKey(url)); !ok || stale != rev {
		t.Fatalf("w2's copy = rev %d, %v; want the stale rev %d", stale, ok, rev)
	}

	gets, writes := leases.gets.Load(), leases.writes.Load()
	got, err := w2.Observe(t.Context(), url, false)
	if err != nil || !got.FromLease {
		t.Fatalf("w2.Observe on a stale copy = FromLease %v, %v; want w1's renewed lease", got.FromLease, err)
	}
	a.wantRequests(t, 3)
	if n := leases.gets.Load() - gets; n != 1 {
		t.Errorf("store reads after the lost compare-and-set = %d, want 1", n)
	}
	if n := leases.writes.Load() - writes; n != 0 {
		t.Errorf("lease writes by the worker whose copy trailed = %d, want 0 (w1's record stands)", n)
	}
	held.unpause()
}

// A failure the copy shows is confirmed by the store before it is reported:
// a copy that trails the recovery reports no failure.
func TestLeaseCopyFailureIsReadFromTheStore(t *testing.T) {
	leases, _, url := sharedLease(t, "max-age=30")
	held := newHeldFeed(leases)
	cards := memstore.NewCards()
	clk := newClock()
	w2 := leaseWorker(t, clk, held, cards, time.Hour)

	if _, err := w2.Observe(t.Context(), url, false); err != nil {
		t.Fatal(err)
	}
	// A recorded failure, copied.
	l, rev, err := leases.KVLeases.Get(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	l.FailReason, l.FailedAt, l.RetryAt, l.FailCount = string(ReasonStatus), clk.Now(), clk.Now().Add(time.Minute), 1
	l.MaxAge = 0
	if rev, err = leases.KVLeases.Update(t.Context(), l, rev); err != nil {
		t.Fatal(err)
	}
	copyHolds(t, w2, url, rev)
	held.pause()
	// The store moves on: the agent is back (another worker's fetch cleared it).
	l.FailReason, l.RetryAt, l.FailCount = "", time.Time{}, 0
	l.FetchedAt, l.MaxAge = clk.Now(), time.Minute
	if _, err = leases.KVLeases.Update(t.Context(), l, rev); err != nil {
		t.Fatal(err)
	}
	got, err := w2.Observe(t.Context(), url, false)
	if err != nil || !got.FromLease {
		t.Fatalf("w2.Observe with a copied failure the store cleared = FromLease %v, %v; want the lease", got.FromLease, err)
	}
	held.unpause()
}

// A watch that breaks empties the copy — reads go to the store — and a new
// one is started; once it has caught up, the copy answers again.
func TestLeaseCopyWatchBreaksAndRecovers(t *testing.T) {
	leases, a, url := sharedLease(t, "max-age=60")
	held := newHeldFeed(leases)
	cards := memstore.NewCards()
	w := leaseWorker(t, newClock(), held, cards, 0)
	if _, err := w.Observe(t.Context(), url, false); err != nil {
		t.Fatal(err)
	}
	rev := copiesStored(t, w, leases, url)

	held.breakNow <- struct{}{}
	natstest.Eventually(t, 10*time.Second, "a broken watch empties the copy", func() bool {
		_, _, ok := w.copy.get(store.EncodeKey(url))
		return !ok
	})
	gets := leases.gets.Load()
	if _, err := w.Observe(t.Context(), url, false); err != nil {
		t.Fatal(err)
	}
	if n := leases.gets.Load() - gets; n == 0 {
		// The new watch may already have caught up; then it answered.
		if _, _, ok := w.copy.get(store.EncodeKey(url)); !ok {
			t.Error("no store read while the copy was broken")
		}
	}
	copyHolds(t, w, url, rev)
	if n := held.follows.Load(); n < 2 {
		t.Errorf("watches started = %d, want a second after the break", n)
	}
	a.wantRequests(t, 1)
}

// A server restart: while the server is down the copy stops answering
// (its head cannot be read), and after it the copy catches up again,
// lease written by another worker after the restart included.
func TestLeaseCopyServerRestart(t *testing.T) {
	var sopts server.Options
	srv, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { sopts = *o })
	sopts.Port = srv.Addr().(*net.TCPAddr).Port
	leases := kvLeases(t, js)
	cards := memstore.NewCards()
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=60")
	url := a.url("/.well-known/agent-card.json")
	b := newAgent(t, cardJSON("2", true), `"v2"`, "max-age=60")
	urlB := b.url("/.well-known/agent-card.json")
	clk := newClock()
	w1, w2 := leaseWorker(t, clk, leases, cards, 0), leaseWorker(t, clk, leases, cards, 0)
	if _, err := w2.Observe(t.Context(), url, false); err != nil {
		t.Fatal(err)
	}
	_, rev, err := leases.Get(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	copyHolds(t, w2, url, rev)

	srv.Shutdown()
	srv.WaitForShutdown()
	natstest.Eventually(t, 10*time.Second, "the copy stops answering while the server is down", func() bool {
		_, _, ok := w2.copy.get(store.EncodeKey(url))
		return !ok
	})
	srv2, err := server.NewServer(&sopts)
	if err != nil {
		t.Fatal(err)
	}
	srv2.Start()
	t.Cleanup(func() { srv2.Shutdown(); srv2.WaitForShutdown() })
	if !srv2.ReadyForConnections(10 * time.Second) {
		t.Fatal("restarted server not ready")
	}
	copyHolds(t, w2, url, rev)

	// Written by w1 after the restart (once the connection is back).
	natstest.Eventually(t, 30*time.Second, "w1 observes after the restart", func() bool {
		_, err := w1.Observe(t.Context(), urlB, false)
		return err == nil
	})
	_, revB, err := leases.Get(t.Context(), urlB)
	if err != nil {
		t.Fatal(err)
	}
	copyHolds(t, w2, urlB, revB)
	got, err := w2.Observe(t.Context(), urlB, false)
	if err != nil || !got.FromLease {
		t.Fatalf("w2.Observe after the restart = FromLease %v, %v; want w1's lease", got.FromLease, err)
	}
	b.wantRequests(t, 1)
}

// The copy is bounded in bytes: it evicts the least recently read leases,
// never stores one larger than its bound, and an evicted lease is a miss
// (read from the store), not "not found".
func TestLeaseCopyBound(t *testing.T) {
	l := func(i int) store.Lease {
		return store.Lease{CardURL: fmt.Sprintf("https://agent-%03d.example/card.json", i), Digest: "sha256:" + fmt.Sprintf("%064d", i)}
	}
	size := leaseSize(store.EncodeKey(l(0).CardURL), l(0))
	c := newLeaseCopy(nil, 10*size, time.Hour, time.Second)
	c.current, c.confirmed = true, time.Now()
	for i := range 30 {
		c.put(store.EncodeKey(l(i).CardURL), l(i), uint64(i+1))
		// Read the first after every put, so that it stays.
		if _, _, ok := c.get(store.EncodeKey(l(0).CardURL)); !ok {
			t.Fatalf("after %d puts lease 0 is not held", i+1)
		}
		if c.entries.size() > c.maxBytes {
			t.Fatalf("after %d puts bytes = %d, over the bound %d", i+1, c.entries.size(), c.maxBytes)
		}
	}
	if got := c.entries.len(); got != 10 {
		t.Errorf("entries = %d, want 10", got)
	}
	if _, _, ok := c.get(store.EncodeKey(l(1).CardURL)); ok {
		t.Error("lease 1 still held: the least recently used is not the one evicted")
	}
	for _, i := range []int{0, 29} {
		if _, rev, ok := c.get(store.EncodeKey(l(i).CardURL)); !ok || rev != uint64(i+1) {
			t.Errorf("lease %d = rev %d, %v; want rev %d", i, rev, ok, i+1)
		}
	}
	// A later revision replaces, an earlier one does not.
	key := store.EncodeKey(l(29).CardURL)
	c.put(key, l(29), 7)
	if _, rev, _ := c.get(key); rev != 30 {
		t.Errorf("after an older put rev = %d, want 30", rev)
	}
	c.apply(store.LeaseUpdate{Key: key, Rev: 31, Deleted: true})
	c.put(key, l(29), 30)
	if _, _, ok := c.get(key); ok {
		t.Error("a put older than the removal brought the lease back")
	}
	// Too large to hold at all.
	big := l(99)
	big.FailDetail = string(make([]byte, 20*size))
	c.put(store.EncodeKey(big.CardURL), big, 100)
	if _, _, ok := c.get(store.EncodeKey(big.CardURL)); ok || c.entries.size() > c.maxBytes {
		t.Errorf("a lease over the bound is held (%v) or bytes %d over %d", ok, c.entries.size(), c.maxBytes)
	}
	// Untrusted: no answers.
	c.confirmed = time.Now().Add(-2 * time.Hour)
	if _, _, ok := c.get(store.EncodeKey(l(0).CardURL)); ok {
		t.Error("an unconfirmed copy answered")
	}
}

// Inside a fresh lease that the copy holds and whose body the card cache
// holds, an observation starts no flight (no goroutine, no store read, no
// request) and is the one a flight returns; a forced one, or one once the
// lease is stale, still starts a flight.
func TestFreshCopiedLeaseStartsNoFlight(t *testing.T) {
	leases, a, url := sharedLease(t, "max-age=60")
	clk := newClock()
	f := leaseWorker(t, clk, leases, memstore.NewCards(), 0)

	first, err := f.Observe(t.Context(), url, false)
	if err != nil || first.Status != 200 {
		t.Fatalf("Observe = status %d, %v; want a 200", first.Status, err)
	}
	copiesStored(t, f, leases, url)
	started, gets := f.started.Load(), leases.gets.Load()
	for range 50 {
		got, err := f.Observe(t.Context(), url, false)
		if err != nil || !got.FromLease || got.Digest != first.Digest || got.Card == nil || got.VerifiedAt.IsZero() {
			t.Fatalf("Observe = FromLease %v digest %s card %v verified %v, %v; want the lease of %s",
				got.FromLease, got.Digest, got.Card != nil, got.VerifiedAt, err, first.Digest)
		}
	}
	if n := f.started.Load() - started; n != 0 {
		t.Errorf("flights started inside a fresh copied lease = %d, want 0", n)
	}
	if n := leases.gets.Load() - gets; n != 0 {
		t.Errorf("store reads inside a fresh copied lease = %d, want 0", n)
	}
	a.wantRequests(t, 1)

	clk.Advance(time.Second) // the forced request is newer than the last full fetch
	if _, err := f.Observe(t.Context(), url, true); err != nil {
		t.Fatal(err)
	}
	if n := f.started.Load() - started; n != 1 {
		t.Errorf("flights started by a forced observation = %d, want 1", n)
	}
	a.wantRequests(t, 2)
	clk.Advance(2 * time.Minute) // past max-age
	if _, err := f.Observe(t.Context(), url, false); err != nil {
		t.Fatal(err)
	}
	if n := f.started.Load() - started; n != 2 {
		t.Errorf("flights started once the lease is stale = %d, want 2", n)
	}
}

// BenchmarkObserveLeaseHit is the cost of an Observe answered by a fresh lease
// (no request): what most capability-dependent transitions pay.
func BenchmarkObserveLeaseHit(b *testing.B) {
	benchObserve(b, newAgentB(b), Options{Allow: loopback})
}

// BenchmarkObserveRevalidate304 is the cost of a revalidation answered by 304
// over a kept-alive loopback connection.
func BenchmarkObserveRevalidate304(b *testing.B) {
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "no-cache")
	elapsed := benchObserve(b, a, Options{Allow: loopback, MinLease: -1})
	b.ReportMetric(float64(a.notModified.Load())/elapsed.Seconds(), "304/s")
}

// benchObserve measures Observe of a's card by a Fetcher with o, after a
// first Observe that fetches it, and returns how long the measured loop took.
func benchObserve(b *testing.B, a *agent, o Options) time.Duration {
	f, url := observed(b, a, o)
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := f.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// BenchmarkObserveSharedLease is an Observe answered by a fresh lease in a
// JetStream bucket, through the lease copy ("copy") and with a store read
// ("store", LeaseCopyBytes negative: what every one cost before), the two
// Fetchers taking turns so that machine noise hits both alike: ns per
// Observe of each and their ratio.
//
//	go test ./store/fetcher -run '^$' -bench ObserveSharedLease -benchtime 5000x
func BenchmarkObserveSharedLease(b *testing.B) {
	_, _, js := natstest.StartJetStream(b)
	leases := kvLeases(b, js)
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "max-age=3600")
	url := a.url("/card")
	ctx := context.Background()
	local, _ := observed(b, a, Options{Allow: loopback, Leases: leases})
	remote, _ := observed(b, a, Options{Allow: loopback, Leases: leases, LeaseCopyBytes: -1})
	natstest.Eventually(b, 10*time.Second, "the copy answers", func() bool {
		_, _, ok := local.copy.get(store.EncodeKey(url))
		return ok
	})
	var tl, tr time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := local.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := remote.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
		tl += t1.Sub(t0)
		tr += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(tl.Nanoseconds())/float64(n), "copy-ns/observe")
	b.ReportMetric(float64(tr.Nanoseconds())/float64(n), "store-ns/observe")
	b.ReportMetric(float64(tr)/float64(tl), "store/copy")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkObserveRevalidateKV is a revalidation answered by 304 with the
// lease in a JetStream bucket (the lease copy on), its lease expired before
// every Observe: the lease writes each fetch costs ("writes/fetch", the
// bucket's revisions per request), how many of those writes the copy's
// watch decoded when it delivered them back ("decoded/write"), and its
// time.
//
//	go test ./store/fetcher -run '^$' -bench ObserveRevalidateKV -benchtime 2000x
func BenchmarkObserveRevalidateKV(b *testing.B) {
	_, _, js := natstest.StartJetStream(b)
	leases := &followCount{KVLeases: kvLeases(b, js)}
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "max-age=1")
	clk := newClock()
	f, url := observed(b, a, Options{Allow: loopback, Leases: leases, Now: clk.Now, FullFetchInterval: -1})
	ctx := context.Background()
	head0 := delivered(b, f, leases)
	req0, decoded0 := a.requests.Load(), leases.decoded.Load()
	b.ReportAllocs()
	for b.Loop() {
		clk.Advance(2 * time.Second)
		if _, err := f.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
	}
	head := delivered(b, f, leases)
	b.ReportMetric(float64(head-head0)/float64(a.requests.Load()-req0), "writes/fetch")
	b.ReportMetric(float64(leases.decoded.Load()-decoded0)/float64(head-head0), "decoded/write")
}

// observed is a Fetcher with o, closed when b ends, that has observed a's
// card once; it returns the Fetcher and the card's URL.
func observed(b *testing.B, a *agent, o Options) (*Fetcher, string) {
	b.Helper()
	f, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	url := a.url("/card")
	if _, err := f.Observe(context.Background(), url, false); err != nil {
		b.Fatal(err)
	}
	return f, url
}

// delivered waits until f's lease copy has been delivered every write
// leases holds now, and returns the last one's revision.
func delivered(tb testing.TB, f *Fetcher, leases interface {
	Head(context.Context) (uint64, error)
}) uint64 {
	tb.Helper()
	head, err := leases.Head(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	natstest.Eventually(tb, 10*time.Second, "the watch delivers every write", func() bool {
		f.copy.mu.Lock()
		defer f.copy.mu.Unlock()
		return f.copy.applied >= head
	})
	return head
}

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ConnectTimeout", o.ConnectTimeout, 3 * time.Second},
		{"TotalTimeout", o.TotalTimeout, 10 * time.Second},
		{"MaxBodyBytes", o.MaxBodyBytes, int64(1 << 20)},
		{"MaxRedirects", o.MaxRedirects, 3},
		{"PerHostConcurrency", o.PerHostConcurrency, 4},
		{"MinLease", o.MinLease, time.Second},
		{"MaxLease", o.MaxLease, 5 * time.Minute},
		{"DefaultLease", o.DefaultLease, 30 * time.Second},
		{"FullFetchInterval", o.FullFetchInterval, 5 * time.Minute},
		{"A2AVersion", o.A2AVersion, "1.0"},
		{"Accept", o.Accept, "application/json"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	neg := Options{MinLease: -1}
	neg.setDefaults()
	if neg.MinLease != 0 {
		t.Errorf("MinLease -1 → %v, want 0", neg.MinLease)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"connect over total", func(o *Options) { o.ConnectTimeout, o.TotalTimeout = 5*time.Second, time.Second }, "exceeds TotalTimeout"},
		{"body too big", func(o *Options) { o.MaxBodyBytes = 2 << 20 }, "MaxBodyBytes"},
		{"min over max", func(o *Options) { o.MinLease, o.MaxLease = time.Hour, time.Minute }, "MinLease"},
		{"insecure", func(o *Options) { o.TLSConfig = &tls.Config{InsecureSkipVerify: true} }, "InsecureSkipVerify"},
		{"header injection", func(o *Options) { o.UserAgent = "x\r\nEvil: 1" }, "UserAgent"},
		{"bad prefix", func(o *Options) { o.Allow = []netip.Prefix{{}} }, "Allow"},
		{"negative concurrency", func(o *Options) { o.PerHostConcurrency = -1 }, "PerHostConcurrency"},
	}
	for _, tc := range tests {
		var o Options
		tc.mod(&o)
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestReasonsHaveSentinels(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] {
			t.Errorf("reason %q listed twice", r)
		}
		seen[r] = true
		for _, q := range Reasons() {
			if got := errors.Is(&FetchError{Reason: r}, q); got != (q == r) {
				t.Errorf("errors.Is(FetchError{Reason: %q}, %q) = %v, want %v", r, q, got, q == r)
			}
		}
	}
}

func TestParseAllow(t *testing.T) {
	got, err := ParseAllow(" 127.0.0.0/8, ::1 ,10.1.2.3/16,, 169.254.169.254")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.0/8", "::1/128", "10.1.0.0/16", "169.254.169.254/32"}
	if len(got) != len(want) {
		t.Fatalf("ParseAllow = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("ParseAllow[%d] = %v, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "1.2.3"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) = nil error", bad)
		}
	}
}

func TestAllowMappedPrefix(t *testing.T) {
	f := newFetcher(t, Options{Allow: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}})
	if err := f.guard.check(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("::ffff:127.0.0.0/104 does not allow 127.0.0.1: %v", err)
	}
}

func TestParseCacheControl(t *testing.T) {
	tests := []struct {
		in         []string
		maxAge     time.Duration
		hasMaxAge  bool
		revalidate bool
	}{
		{in: nil},
		{in: []string{"max-age=60"}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{"MAX-AGE=60"}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{` public , max-age = 60 `}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{`max-age="60"`}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{"public", "max-age=5"}, maxAge: 5 * time.Second, hasMaxAge: true},
		{in: []string{`private="a, b", max-age=7`}, maxAge: 7 * time.Second, hasMaxAge: true},
		{in: []string{"max-age=0"}, hasMaxAge: true},
		{in: []string{"no-cache"}, revalidate: true},
		{in: []string{`no-cache="Set-Cookie", max-age=60`}, maxAge: time.Minute, hasMaxAge: true, revalidate: true},
		{in: []string{"No-Store"}, revalidate: true},
		{in: []string{"max-age=60, max-age=60"}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{"max-age=60", "max-age=30"}, maxAge: 30 * time.Second, hasMaxAge: true, revalidate: true},
		{in: []string{"max-age"}, revalidate: true},
		{in: []string{"max-age=-1"}, revalidate: true},
		{in: []string{"max-age=1.5"}, revalidate: true},
		{in: []string{"max-age=99999999999999999999999"}, maxAge: maxDeltaSeconds * time.Second, hasMaxAge: true},
		{in: []string{",,, max-age=3 ,"}, maxAge: 3 * time.Second, hasMaxAge: true},
		{in: []string{`s-maxage=600`}},
		{in: []string{`"unterminated, max-age=60`}}, // unparseable: ignored
	}
	for _, tc := range tests {
		got := parseCacheControl(tc.in)
		want := cacheControl{maxAge: tc.maxAge, hasMaxAge: tc.hasMaxAge, revalidate: tc.revalidate}
		if got != want {
			t.Errorf("parseCacheControl(%q) = %+v, want %+v", tc.in, got, want)
		}
	}
}

func TestLeaseFor(t *testing.T) {
	const lo, hi, def = time.Second, 5 * time.Minute, 30 * time.Second
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", h(), def},
		{"max-age", h("Cache-Control", "max-age=120"), 2 * time.Minute},
		{"max-age=0", h("Cache-Control", "max-age=0"), lo},
		{"no-cache", h("Cache-Control", "no-cache, max-age=120"), lo},
		{"above", h("Cache-Control", "max-age=3600"), hi},
		{"age", h("Cache-Control", "max-age=120", "Age", "100"), 20 * time.Second},
		{"bad age ignored", h("Cache-Control", "max-age=120", "Age", "soon"), 2 * time.Minute},
		{"age does not shorten the default", h("Age", "25"), def},
	}
	for _, tc := range tests {
		if got := leaseFor(tc.h, def, lo, hi); got != tc.want {
			t.Errorf("%s: leaseFor(%v) = %v, want %v", tc.name, tc.h, got, tc.want)
		}
	}
}

func TestParseETag(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{`"abc"`}, `"abc"`},
		{[]string{` W/"v1.0" `}, `W/"v1.0"`},
		{[]string{`""`}, `""`},
		{[]string{`abc123`}, `abc123`}, // unquoted, as some servers send
		{[]string{`"a"`, `"b"`}, ""},
		{[]string{`"a"b"`}, ""},
		{[]string{`"a b"`}, ""},
		{[]string{`a,b`}, ""},
		{[]string{`W/abc`}, ""},
		{[]string{"\"a\r\nX-Evil: 1\""}, ""},
		{[]string{`"` + strings.Repeat("x", maxETagLen) + `"`}, ""},
	}
	for _, tc := range tests {
		if got := parseETag(tc.in); got != tc.want {
			t.Errorf("parseETag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzCacheHeaders checks the header parsers on arbitrary input: no panic, a
// lease within the clamp, and an ETag that is safe to send back verbatim.
// Seed corpus: testdata/fuzz/FuzzCacheHeaders.
func FuzzCacheHeaders(f *testing.F) {
	f.Add("max-age=60", "", `"v1"`)
	f.Add("no-cache", "10", `W/"x"`)
	f.Add(`private="a,b", max-age="30"`, "5", "bare")
	f.Fuzz(func(t *testing.T, cc, age, etag string) {
		const lo, hi, def = time.Second, time.Hour, time.Minute
		h := http.Header{}
		for _, line := range strings.Split(cc, "\n") {
			h.Add("Cache-Control", line)
		}
		h.Set("Age", age)
		d := leaseFor(h, def, lo, hi)
		if d < lo || d > hi {
			t.Fatalf("leaseFor(%q, Age %q) = %v outside [%v, %v]", cc, age, d, lo, hi)
		}
		parsed := parseCacheControl(h.Values("Cache-Control"))
		if parsed.maxAge < 0 || parsed.maxAge > maxDeltaSeconds*time.Second {
			t.Fatalf("maxAge %v out of range", parsed.maxAge)
		}
		if again := parseCacheControl(h.Values("Cache-Control")); again != parsed {
			t.Fatalf("parseCacheControl not deterministic")
		}
		got := parseETag([]string{etag})
		if got == "" {
			return
		}
		if len(got) > maxETagLen || !validHeaderValue(got) || strings.ContainsAny(got, " \t\r\n,") && !strings.HasSuffix(got, `"`) {
			t.Fatalf("parseETag(%q) = %q: not safe to send back", etag, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x21 || got[i] == 0x7f {
				t.Fatalf("parseETag(%q) = %q contains byte %#x", etag, got, got[i])
			}
		}
		if parseETag([]string{got}) != got {
			t.Fatalf("parseETag not idempotent on %q", got)
		}
	})
}

// check reports an lru whose byte count is not the sum of its entries'
// sizes, that exceeds a bound, or whose map and list disagree.
func (c *lru[K, V]) check() error {
	var sum int64
	for el := c.order.Front(); el != nil; el = el.Next() {
		sum += el.Value.(*lruEntry[K, V]).size
	}
	if c.bytes != sum || c.bytes > c.maxBytes || c.order.Len() > c.maxEntries || c.order.Len() != len(c.items) {
		return fmt.Errorf("%d entries (%d in the map) of %d bytes (entries sum to %d); bounds %d entries, %d bytes",
			c.order.Len(), len(c.items), c.bytes, sum, c.maxEntries, c.maxBytes)
	}
	return nil
}

func TestLRU(t *testing.T) {
	c := newLRU[string, int](3, 100)
	for i, k := range []string{"a", "b", "c"} {
		c.put(k, i, 30)
	}
	c.get("a") // b is now the least recently used
	c.put("d", 3, 30)
	if _, ok := c.get("b"); ok {
		t.Error("the least recently used entry was kept past the count bound")
	}
	c.put("e", 4, 60) // 30 (a) + 30 (c) + 30 (d) + 60: c and a go (a was read before d and e)
	for k, want := range map[string]bool{"a": false, "c": false, "d": true, "e": true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("after a 60-byte put: get(%q) found = %v, want %v", k, ok, want)
		}
	}
	c.put("d", 5, 101)
	if _, ok := c.get("d"); ok {
		t.Error("an entry larger than the byte bound was kept, or the value it replaced")
	}
	if v, ok := c.get("e"); !ok || v != 4 || c.len() != 1 || c.size() != 60 {
		t.Errorf("get(e) = %d, %v; len %d, size %d; want 4, true; 1, 60", v, ok, c.len(), c.size())
	}
	c.remove("e")
	if c.len() != 0 || c.size() != 0 {
		t.Errorf("after remove: len %d, size %d, want 0, 0", c.len(), c.size())
	}
	if err := c.check(); err != nil {
		t.Error(err)
	}
}

// extAgent is an httptest agent with an authenticated extended card: its
// public card at the well-known path names one interface (binding and
// version as given) and declares the extended card; the extended card is
// answered only to requests that carry the token, else 401 (or status).
type extAgent struct {
	srv     *httptest.Server
	binding string
	version string

	mu       sync.Mutex
	token    string
	status   int    // when set, the extended endpoint answers it
	rpcError string // when set, a JSON-RPC error answer (raw JSON)
	redirect string // when set, the extended endpoint redirects here
	extended []byte
	jwks     []byte // when set, served at /jwks.json (no credential needed)
	seen     []extRequest
}

type extRequest struct {
	method, path, auth, a2aVersion, rpcMethod string
	cert                                      bool
}

func newExtAgent(t *testing.T, binding, version string, tlsServer bool) *extAgent {
	a := &extAgent{binding: binding, version: version, token: "Bearer " + testSecret}
	a.extended = cardJSON("2.0.0", true, "summarize", "audit-ledger")
	a.srv = startServer(t, http.HandlerFunc(a.serve), tlsServer)
	return a
}

// startServer starts an httptest server for h, closed with the test: over
// TLS asking for (not requiring) a client certificate when tlsServer is
// set, so that the test sees whether one was presented.
func startServer(t *testing.T, h http.Handler, tlsServer bool) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

func (a *extAgent) publicCard() []byte {
	path := "/a2a"
	return fmt.Appendf(nil, `{"name":"Test Agent","description":"test","version":"1.0.0",`+
		`"supportedInterfaces":[{"url":"%s%s","protocolBinding":%q,"protocolVersion":%q}],`+
		`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"summarize","name":"s","description":"d","tags":[]}]}`, a.srv.URL, path, a.binding, a.version)
}

func (a *extAgent) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	req := extRequest{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), a2aVersion: r.Header.Get("A2A-Version"),
		cert: r.TLS != nil && len(r.TLS.PeerCertificates) > 0}
	if r.Method == http.MethodPost {
		var rpc struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &rpc)
		req.rpcMethod = rpc.Method
		if len(rpc.Params) == 0 {
			req.rpcMethod += " (no params)"
		}
	}
	a.seen = append(a.seen, req)
	if r.URL.Path == WellKnownPath {
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write(a.publicCard())
		return
	}
	if r.URL.Path == "/jwks.json" && a.jwks != nil {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(a.jwks)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/a2a") {
		http.NotFound(w, r)
		return
	}
	switch {
	case a.redirect != "":
		http.Redirect(w, r, a.redirect, http.StatusFound)
		return
	case a.status != 0:
		w.WriteHeader(a.status)
		return
	case a.token != "" && req.auth != a.token && !req.cert:
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Cache-Control", "max-age=60")
	if a.binding == "JSONRPC" {
		if a.rpcError != "" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":%s}`, a.rpcError)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, a.extended)
		return
	}
	_, _ = w.Write(a.extended)
}

func (a *extAgent) requests() []extRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]extRequest(nil), a.seen...)
}

func (a *extAgent) set(fn func(a *extAgent)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn(a)
}

func headerCreds(t *testing.T, origin, value string) *Credentials {
	t.Helper()
	c, err := ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": %q}}}`, origin, value), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// observeBoth observes the agent's public card, then its extended card.
func observeBoth(t *testing.T, f *Fetcher, a *extAgent) (Observation, Observation, error) {
	t.Helper()
	ctx := context.Background()
	pub, err := f.ObserveAgent(ctx, a.srv.URL, "", false)
	if err != nil {
		t.Fatalf("public card: %v", err)
	}
	ext, err := f.ObserveExtended(ctx, pub, false)
	return pub, ext, err
}

// TestObserveExtendedBindings: each version's method and binding, with the
// credential, and the public card never gets it.
func TestObserveExtendedBindings(t *testing.T) {
	for _, tc := range []struct {
		binding, version, method, path, a2aVersion string
	}{
		{"JSONRPC", "1.0", http.MethodPost, "/a2a", "1.0"},
		{"JSONRPC", "0.3.0", http.MethodPost, "/a2a", "0.3"},
		{"HTTP+JSON", "1.0", http.MethodGet, "/a2a/extendedAgentCard", "1.0"},
		{"HTTP+JSON", "0.3.0", http.MethodGet, "/a2a/v1/card", "0.3"},
	} {
		t.Run(tc.binding+" "+tc.version, func(t *testing.T) {
			a := newExtAgent(t, tc.binding, tc.version, false)
			o := testOptions(nil)
			o.Credentials = headerCreds(t, a.srv.URL, "Bearer "+testSecret)
			f := newFetcher(t, o)
			pub, ext, err := observeBoth(t, f, a)
			if err != nil {
				t.Fatalf("ObserveExtended: %v", err)
			}
			if ext.Digest == pub.Digest || ext.Card.Version != "2.0.0" || ext.Card.Skills[0].ID != "audit-ledger" {
				t.Errorf("extended observation %s version %q, public %s", ext.Digest, ext.Card.Version, pub.Digest)
			}
			if !IsExtendedKey(ext.CardURL) || IsExtendedKey(pub.CardURL) {
				t.Errorf("keys: extended %q, public %q", ext.CardURL, pub.CardURL)
			}
			reqs := a.requests()
			if len(reqs) != 2 {
				t.Fatalf("requests %+v, want the public card and the extended card", reqs)
			}
			if reqs[0].auth != "" {
				t.Errorf("the public card request carried credentials")
			}
			r := reqs[1]
			wantRPC := ""
			if tc.binding == "JSONRPC" {
				wantRPC = MethodExtendedV10
				if tc.a2aVersion == "0.3" {
					wantRPC = MethodExtendedV03
				}
			}
			if r.method != tc.method || r.path != tc.path || r.auth != "Bearer "+testSecret || r.a2aVersion != tc.a2aVersion || r.rpcMethod != wantRPC {
				t.Errorf("extended request %+v, want %s %s A2A-Version %s method %q with the credential", r, tc.method, tc.path, tc.a2aVersion, wantRPC)
			}
			// Leased like any card: within its max-age, no request.
			if _, _, err := observeBoth(t, f, a); err != nil || len(a.requests()) != 2 {
				t.Errorf("second look: %v, %d requests", err, len(a.requests()))
			}
		})
	}
}

func TestObserveExtendedRefusals(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("a redirect target got the credential")
		}
		_, _ = w.Write(cardJSON("9", true))
	}))
	defer other.Close()
	for _, tc := range []struct {
		name   string
		set    func(a *extAgent)
		creds  string
		reason Reason
	}{
		{"wrong token", nil, "Bearer wrong", ReasonUnauthorized},
		{"forbidden", func(a *extAgent) { a.status = http.StatusForbidden }, "", ReasonForbidden},
		{"server error", func(a *extAgent) { a.status = http.StatusBadGateway }, "", ReasonStatus},
		{"not configured", func(a *extAgent) {
			a.rpcError = `{"code":-32007,"message":"Extended card not configured for Bearer ` + testSecret + `"}`
		}, "", ReasonRPCError},
		{"redirect", func(a *extAgent) { a.redirect = other.URL + "/card" }, "", ReasonRedirectRefused},
		{"result and error", func(a *extAgent) { a.rpcError = `{"code":1}, "result": {}` }, "", ReasonNotACard},
		{"result not a card", func(a *extAgent) { a.extended = []byte(`[1]`) }, "", ReasonNotACard},
		{"duplicate keys", func(a *extAgent) { a.extended = []byte(`{"name":"a","name":"b"}`) }, "", ReasonDuplicateKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newExtAgent(t, "JSONRPC", "1.0", false)
			if tc.set != nil {
				a.set(tc.set)
			}
			o := testOptions(nil)
			o.Credentials = headerCreds(t, a.srv.URL, "Bearer "+testSecret)
			if tc.creds != "" {
				o.Credentials = headerCreds(t, a.srv.URL, tc.creds)
			}
			f := newFetcher(t, o)
			_, _, err := observeBoth(t, f, a)
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Reason != tc.reason || !errors.Is(err, tc.reason) {
				t.Fatalf("error = %v, want reason %s", err, tc.reason)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("the error repeats the secret: %v", err)
			}
			if !IsExtendedKey(fe.URL) {
				t.Errorf("error URL %q is not the extended key", fe.URL)
			}
			// Recorded on the lease like a public card's failure: the next
			// look is answered from it, still without the secret.
			_, _, err2 := observeBoth(t, f, a)
			if !errors.As(err2, &fe) || fe.Reason != tc.reason || strings.Contains(err2.Error(), testSecret) {
				t.Errorf("recorded failure = %v", err2)
			}
		})
	}
}

// TestObserveExtendedUnavailable: without a credential for the agent's
// origin, or without an extended card offered on the agent's own origin,
// nothing is asked.
func TestObserveExtendedUnavailable(t *testing.T) {
	a := newExtAgent(t, "JSONRPC", "1.0", false)
	// edit replaces the public card by a copy (its interfaces copied too)
	// for fn to change.
	edit := func(fn func(p *Observation)) func(*Observation) {
		return func(p *Observation) {
			c := *p.Card
			c.Interfaces = slices.Clone(c.Interfaces)
			p.Card = &c
			fn(p)
		}
	}
	for _, tc := range []struct {
		name  string
		creds CredentialSource
		card  func(pub *Observation)
		why   string
	}{
		{"no credentials", nil, nil, "no-credentials"},
		{"another origin's credentials", headerCreds(t, "https://other.example", "Bearer x"), nil, "no-credentials"},
		{"not offered", headerCreds(t, a.srv.URL, "x"), edit(func(p *Observation) {
			p.Card.Capabilities.ExtendedAgentCard = false
		}), "not-offered"},
		{"interface on another origin", headerCreds(t, a.srv.URL, "x"), edit(func(p *Observation) {
			p.Card.Interfaces[0].URL = "https://other.example/a2a"
		}), "no-interface"},
		{"gRPC only", headerCreds(t, a.srv.URL, "x"), edit(func(p *Observation) {
			p.Card.Interfaces[0].ProtocolBinding = "GRPC"
		}), "no-interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(nil)
			o.Credentials = tc.creds
			f := newFetcher(t, o)
			before := len(a.requests())
			pub, err := f.ObserveAgent(context.Background(), a.srv.URL, "", false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.card != nil {
				tc.card(&pub)
			}
			_, err = f.ObserveExtended(context.Background(), pub, false)
			var ue *ExtendedUnavailableError
			if !errors.Is(err, ErrExtendedUnavailable) || !errors.As(err, &ue) || ue.Why != tc.why {
				t.Fatalf("error = %v, want unavailable (%s)", err, tc.why)
			}
			for _, r := range a.requests()[before:] {
				if r.path != WellKnownPath {
					t.Errorf("asked %s %s", r.method, r.path)
				}
			}
		})
	}
}

// TestObserveExtendedCertificate: a client certificate is presented on the
// extended card's connections only, never on the public card's.
func TestObserveExtendedCertificate(t *testing.T) {
	a := newExtAgent(t, "HTTP+JSON", "1.0", true)
	a.set(func(a *extAgent) { a.token = "" })
	a.set(func(a *extAgent) { a.token = "required" }) // only the certificate lets it in
	dir := t.TempDir()
	certPath, keyPath, _ := writePEMPair(t, dir, "client")
	credFile := filepath.Join(dir, "creds.json")
	if err := os.WriteFile(credFile, fmt.Appendf(nil, `{%q: {"cert": %q, "key": %q}}`, a.srv.URL, filepath.Base(certPath), filepath.Base(keyPath)), 0o600); err != nil {
		t.Fatal(err)
	}
	cf, err := OpenCredentials(credFile, CredentialsFileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(a.srv.Certificate())
	o := testOptions(nil)
	o.TLSConfig = &tls.Config{RootCAs: pool}
	o.Credentials = cf
	f := newFetcher(t, o)
	_, ext, err := observeBoth(t, f, a)
	if err != nil {
		t.Fatalf("ObserveExtended: %v", err)
	}
	if ext.Card.Version != "2.0.0" {
		t.Errorf("extended card version %q", ext.Card.Version)
	}
	// Another public fetch after the credentialed one: still no certificate.
	if _, err := f.Fetch(context.Background(), Request{URL: a.srv.URL + WellKnownPath}); err != nil {
		t.Fatal(err)
	}
	for _, r := range a.requests() {
		if r.path == WellKnownPath && r.cert {
			t.Errorf("the public card request presented the client certificate")
		}
		if r.path == "/a2a/extendedAgentCard" && !r.cert {
			t.Errorf("the extended card request presented no certificate")
		}
	}
}

func TestExtendedKeyNeverCollides(t *testing.T) {
	e := ExtendedEndpoint{URL: "https://agent.example/a2a/extendedAgentCard", Binding: "HTTP+JSON", Version: "1.0"}
	pub, err := CanonicalURL(e.Key())
	if err != nil {
		t.Fatal(err)
	}
	if pub == e.Key() || IsExtendedKey(pub) {
		t.Errorf("a client cardUrl %q shares the extended key %q", pub, e.Key())
	}
	back, ok := parseExtendedKey(e.Key())
	if !ok || back != e {
		t.Errorf("parseExtendedKey(%q) = %+v, %v", e.Key(), back, ok)
	}
}

// jkuRecorder is a key server on an origin of its own: it serves a JWKS
// and records what every request presented.
type jkuRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []extRequest
}

func newJKURecorder(t *testing.T, jwks []byte, tlsServer bool) *jkuRecorder {
	k := &jkuRecorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.seen = append(k.seen, extRequest{method: r.Method, path: r.URL.Path, auth: headerDump(r),
			cert: r.TLS != nil && len(r.TLS.PeerCertificates) > 0})
		k.mu.Unlock()
		_, _ = w.Write(jwks)
	})
	k.srv = startServer(t, h, tlsServer)
	return k
}

func (k *jkuRecorder) requests() []extRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]extRequest(nil), k.seen...)
}

// headerDump is every header of r, names and values, to search for a
// secret whatever header might carry it.
func headerDump(r *http.Request) string {
	var b strings.Builder
	for name, vs := range r.Header {
		fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(vs, ", "))
	}
	return b.String()
}

// TestExtendedJKUNeverGetsCredentials: a signed extended card whose
// signature names a jku — on another origin, and on the agent's own origin
// — is verified with keys fetched from it, and that fetch presents no
// credential at all, neither the header nor the client certificate held
// for the agent's origin: a jku is chosen by whoever wrote the card, and
// credentials are only ever sent to the extended card request itself.
func TestExtendedJKUNeverGetsCredentials(t *testing.T) {
	signer := newTestSigner(t, "ext-key")
	for _, tc := range []struct {
		name string
		cert bool // a client certificate credential (TLS), else a header
		same bool // the jku is on the agent's own origin
	}{
		{name: "header, jku on another origin"},
		{name: "header, jku on the agent's origin", same: true},
		{name: "certificate, jku on another origin", cert: true},
		{name: "certificate, jku on the agent's origin", cert: true, same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newExtAgent(t, "JSONRPC", "1.0", tc.cert)
			other := newJKURecorder(t, signer.jwks, tc.cert)
			jku := other.srv.URL + "/jwks.json"
			if tc.same {
				jku = a.srv.URL + "/jwks.json"
			}
			a.set(func(a *extAgent) {
				a.jwks = signer.jwks
				a.extended = signer.sign(t, cardJSON("2.0.0", true, "summarize", "audit-ledger"), jku)
			})
			o := testOptions(nil)
			o.Signatures = SignatureOptions{JKU: JKUAny}
			if tc.cert {
				a.set(func(a *extAgent) { a.token = "required" }) // only the certificate lets it in
				dir := t.TempDir()
				certPath, keyPath, _ := writePEMPair(t, dir, "client")
				credFile := filepath.Join(dir, "creds.json")
				// The credential is held for the agent's origin only; the
				// other origin has one of its own, which it must not get either.
				body := fmt.Sprintf(`{%q: {"cert": %q, "key": %q}}`, a.srv.URL, filepath.Base(certPath), filepath.Base(keyPath))
				if err := os.WriteFile(credFile, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
				cf, err := OpenCredentials(credFile, CredentialsFileOptions{})
				if err != nil {
					t.Fatal(err)
				}
				o.Credentials = cf
				pool := x509.NewCertPool()
				pool.AddCert(a.srv.Certificate())
				pool.AddCert(other.srv.Certificate())
				o.TLSConfig = &tls.Config{RootCAs: pool}
			} else {
				o.Credentials = headerCreds(t, a.srv.URL, "Bearer "+testSecret)
			}
			f := newFetcher(t, o)
			_, ext, err := observeBoth(t, f, a)
			if err != nil {
				t.Fatalf("ObserveExtended: %v", err)
			}
			if len(ext.Signatures) != 1 || !ext.Signatures[0].Verified || ext.Signatures[0].Source != "jku" || ext.Signatures[0].JKU != jku {
				t.Fatalf("extended card signatures %+v, want one verified with the keys at %s", ext.Signatures, jku)
			}

			var keyRequests, extRequests []extRequest
			for _, r := range append(a.requests(), other.requests()...) {
				switch r.path {
				case "/jwks.json":
					keyRequests = append(keyRequests, r)
				case "/a2a":
					extRequests = append(extRequests, r)
				}
			}
			if len(keyRequests) == 0 {
				t.Fatalf("the jku %s was never fetched", jku)
			}
			for _, r := range keyRequests {
				if strings.Contains(r.auth, testSecret) || strings.Contains(r.auth, "Authorization") || r.cert {
					t.Errorf("the jku fetch presented a credential (certificate %v): %q", r.cert, r.auth)
				}
			}
			if tc.same {
				if n := len(other.requests()); n != 0 {
					t.Errorf("the other origin was asked %d times", n)
				}
			}
			// The extended card request itself did carry it.
			for _, r := range extRequests {
				if tc.cert && !r.cert || !tc.cert && r.auth != "Bearer "+testSecret {
					t.Errorf("the extended card request carried no credential: %+v", r)
				}
			}
			if len(extRequests) == 0 {
				t.Fatal("no extended card request")
			}
		})
	}
}

// testSecret is the credential value every secret-printing test looks for.
const testSecret = "s3cr3t-Bearer-token-7f1c"

// writePEMPair writes a self-signed client certificate and its key into dir
// and returns their paths (and the certificate, for a server to trust).
func writePEMPair(t testing.TB, dir, name string) (certPath, keyPath string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath, cert
}

func readFrom(dir string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, p)) }
}

func TestParseCredentials(t *testing.T) {
	dir := t.TempDir()
	writePEMPair(t, dir, "client")
	c, err := ParseCredentials([]byte(`{
		"https://Ledger.example:443/": {"headers": {"authorization": "Bearer `+testSecret+`", "X-Api-Key": "k1"}},
		"http://127.0.0.1:41241": {"cert": "client.pem", "key": "client.key"}
	}`), readFrom(dir))
	if err != nil {
		t.Fatalf("ParseCredentials: %v", err)
	}
	if got := c.Origins(); fmt.Sprint(got) != "[http://127.0.0.1:41241 https://ledger.example]" {
		t.Errorf("Origins = %v", got)
	}
	led, ok := c.For("https://ledger.example")
	if !ok || led.HasCertificate() {
		t.Fatalf("ledger credential = %v, %v", led, ok)
	}
	hs := led.Headers()
	if len(hs) != 2 || hs[0].Name != "Authorization" || hs[0].Value.Reveal() != "Bearer "+testSecret || hs[1].Name != "X-Api-Key" {
		t.Errorf("headers = %v", hs)
	}
	if cl, ok := c.For("http://127.0.0.1:41241"); !ok || !cl.HasCertificate() {
		t.Errorf("certificate credential = %v, %v", cl, ok)
	}
	if _, ok := c.For("https://other.example"); ok {
		t.Error("a credential for an origin the file does not name")
	}
}

func TestParseCredentialsErrors(t *testing.T) {
	dir := t.TempDir()
	writePEMPair(t, dir, "a")
	writePEMPair(t, dir, "b")
	big := `"` + strings.Repeat("x", MaxCredentialHeaderBytes) + `"`
	for _, tc := range []struct {
		name, file string
		want       error
		origin     string
	}{
		{"not JSON", `{"https://a.example": `, ErrCredentialsSyntax, ""},
		{"an array", `[]`, ErrCredentialsSyntax, ""},
		{"duplicate key", `{"https://a.example": {"headers": {"A": "1"}}, "https://a.example": {"headers": {"A": "2"}}}`, ErrCredentialsSyntax, ""},
		{"two spellings", `{"https://a.example": {"headers": {"A": "1"}}, "HTTPS://A.example:443": {"headers": {"A": "2"}}}`, ErrCredentialsDuplicate, "HTTPS://A.example:443"},
		{"a path", `{"https://a.example/x": {"headers": {"A": "1"}}}`, ErrNotOrigin, "https://a.example/x"},
		{"user info", `{"https://u:p@a.example": {"headers": {"A": "1"}}}`, ErrNotOrigin, "https://u:p@a.example"},
		{"ftp", `{"ftp://a.example": {"headers": {"A": "1"}}}`, ErrNotOrigin, "ftp://a.example"},
		{"entry not an object", `{"https://a.example": "Bearer x"}`, ErrCredentialsEntry, "https://a.example"},
		{"unknown member", `{"https://a.example": {"headers": {"A": "1"}, "extra": 1}}`, ErrCredentialsEntry, "https://a.example"},
		{"headers and cert", `{"https://a.example": {"headers": {"A": "1"}, "cert": "a.pem", "key": "a.key"}}`, ErrCredentialsEntry, "https://a.example"},
		{"no headers", `{"https://a.example": {"headers": {}}}`, ErrCredentialsEntry, "https://a.example"},
		{"headers an array", `{"https://a.example": {"headers": ["A"]}}`, ErrCredentialsEntry, "https://a.example"},
		{"header name with space", `{"https://a.example": {"headers": {"X Key": "1"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"header name with colon", `{"https://a.example": {"headers": {"X:": "1"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"reserved Host", `{"https://a.example": {"headers": {"host": "evil.example"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"reserved A2A-Version", `{"https://a.example": {"headers": {"A2A-Version": "0.3"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"header twice", `{"https://a.example": {"headers": {"x-key": "1", "X-Key": "2"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value a number", `{"https://a.example": {"headers": {"X-Key": 1}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value empty", `{"https://a.example": {"headers": {"X-Key": ""}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value CRLF", `{"https://a.example": {"headers": {"X-Key": "a\r\nHost: evil"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value too long", `{"https://a.example": {"headers": {"X-Key": ` + big + `}}}`, ErrCredentialsTooLarge, "https://a.example"},
		{"cert missing", `{"https://a.example": {"cert": "none.pem", "key": "a.key"}}`, ErrCredentialsCertificate, "https://a.example"},
		{"cert without key", `{"https://a.example": {"cert": "a.pem"}}`, ErrCredentialsEntry, "https://a.example"},
		{"key of another cert", `{"https://a.example": {"cert": "a.pem", "key": "b.key"}}`, ErrCredentialsCertificate, "https://a.example"},
		{"cert not a string", `{"https://a.example": {"cert": 1, "key": "a.key"}}`, ErrCredentialsEntry, "https://a.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCredentials([]byte(tc.file), readFrom(dir))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			var ce *CredentialsError
			if !errors.As(err, &ce) || ce.Origin != tc.origin {
				t.Errorf("error = %#v, want a *CredentialsError for origin %q", err, tc.origin)
			}
		})
	}
	many := make(map[string]any)
	for i := range MaxCredentialOrigins + 1 {
		many[fmt.Sprintf("https://a%d.example", i)] = map[string]any{"headers": map[string]string{"A": "1"}}
	}
	b, _ := json.Marshal(many)
	if _, err := ParseCredentials(b, nil); !errors.Is(err, ErrCredentialsTooLarge) {
		t.Errorf("%d origins: error = %v, want ErrCredentialsTooLarge", len(many), err)
	}
}

// TestCredentialErrorsNeverRepeatSecrets: whatever is wrong with a
// credentials file, its error text does not repeat a value (the JSON
// parser's quote of the input is dropped).
func TestCredentialErrorsNeverRepeatSecrets(t *testing.T) {
	for _, file := range []string{
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `\u0001"}}}`,
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `", "x-key": "` + testSecret + `"}}}`,
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `" "B": 1}}}`,
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `\x"}}}`,
		`{"https://a.example": {"headers": {"X-Key": " ` + testSecret + `"}}}`,
		`{"https://a.example": {"headers": {"Host": "` + testSecret + `"}}}`,
		`{"` + testSecret + `": {"headers": {"X-Key": "1"}}}`[:20] + testSecret,
	} {
		_, err := ParseCredentials([]byte(file), nil)
		if err == nil {
			t.Fatalf("%s: parsed", file)
		}
		if strings.Contains(err.Error(), testSecret) || strings.Contains(fmt.Sprintf("%#v", err), testSecret) {
			t.Errorf("error repeats the secret: %v", err)
		}
	}
}

// TestSecretNeverPrints: a Secret and a Credential print redacted through
// fmt (every verb), JSON, zerolog and slog.
func TestSecretNeverPrints(t *testing.T) {
	c, err := ParseCredentials([]byte(`{"https://a.example": {"headers": {"Authorization": "Bearer `+testSecret+`"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := c.For("https://a.example")
	s := cr.Headers()[0].Value
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		fmt.Fprintf(&out, verb+"|", s)
		fmt.Fprintf(&out, verb+"|", cr)
		fmt.Fprintf(&out, verb+"|", cr.Headers())
		fmt.Fprintf(&out, verb+"|", c)
		fmt.Fprintf(&out, verb+"|", struct{ c Credential }{cr})
		fmt.Fprintf(&out, verb+"|", struct{ c *Credentials }{c})
	}
	j, _ := json.Marshal(map[string]any{"s": s, "c": cr, "h": cr.Headers(), "all": c})
	out.Write(j)
	zl := zerolog.New(&out)
	zl.Info().Interface("s", s).Interface("c", cr).Stringer("str", s).Any("h", cr.Headers()).Any("all", c).Msg("x")
	slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "s", s, "c", cr, "h", cr.Headers())
	slog.New(slog.NewTextHandler(&out, nil)).Info("x", "s", s, "c", cr, "h", cr.Headers())
	if strings.Contains(out.String(), testSecret) {
		t.Errorf("the secret printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), redacted) || !strings.Contains(out.String(), "headers Authorization") {
		t.Errorf("no redacted value or header name printed:\n%s", out.String())
	}
}

func TestCredentialsFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"https://a.example": {"headers": {"X-Key": "one"}}}`)
	clk := newClock()
	var reloads atomic.Int64
	var lastErr atomic.Value
	cf, err := OpenCredentials(path, CredentialsFileOptions{Reload: time.Second, Now: clk.Now,
		OnReload: func(_ int, err error) { reloads.Add(1); lastErr.Store(fmt.Sprint(err)) }})
	if err != nil {
		t.Fatal(err)
	}
	key := func(origin string) string {
		c, ok := cf.For(origin)
		if !ok {
			return ""
		}
		return c.Headers()[0].Value.Reveal()
	}
	if got := key("https://a.example"); got != "one" {
		t.Fatalf("first version: %q", got)
	}
	// Within Reload the file is not looked at again.
	write(`{"https://a.example": {"headers": {"X-Key": "two"}}, "https://b.example": {"headers": {"X-Key": "b"}}}`)
	if got := key("https://a.example"); got != "one" {
		t.Errorf("before Reload passed: %q", got)
	}
	clk.Advance(time.Second)
	if got := key("https://a.example"); got != "two" || key("https://b.example") != "b" {
		t.Errorf("after Reload: a %q, b %q", got, key("https://b.example"))
	}
	if reloads.Load() != 1 {
		t.Errorf("reloads = %d, want 1", reloads.Load())
	}
	// A version that does not parse keeps the previous one, reported once.
	write(`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `\u0000"}}}`)
	clk.Advance(time.Second)
	if got := key("https://a.example"); got != "two" {
		t.Errorf("after a bad version: %q", got)
	}
	clk.Advance(time.Second)
	key("https://a.example")
	if n := reloads.Load(); n != 2 {
		t.Errorf("reloads = %d, want 2 (the bad version reported once)", n)
	}
	if e, _ := lastErr.Load().(string); !strings.Contains(e, "bad header") || strings.Contains(e, testSecret) {
		t.Errorf("reload error = %q", e)
	}
	// Removing an origin takes its credential away.
	write(`{"https://b.example": {"headers": {"X-Key": "b2"}}}`)
	clk.Advance(time.Second)
	if _, ok := cf.For("https://a.example"); ok || key("https://b.example") != "b2" {
		t.Errorf("after removing a.example: a present %v, b %q", ok, key("https://b.example"))
	}
	// A certificate rotated in place is read again.
	c1, k1, _ := writePEMPair(t, dir, "client")
	write(`{"https://c.example": {"cert": "client.pem", "key": "client.key"}}`)
	clk.Advance(time.Second)
	first, ok := cf.For("https://c.example")
	if !ok || !first.HasCertificate() {
		t.Fatal("no certificate credential")
	}
	writePEMPair(t, dir, "client")
	_ = c1
	_ = k1
	clk.Advance(time.Second)
	second, _ := cf.For("https://c.example")
	if first.cert == second.cert || bytes.Equal(first.cert.Certificate[0], second.cert.Certificate[0]) {
		t.Error("a rotated certificate was not read again")
	}
	if _, err := OpenCredentials(filepath.Join(dir, "none.json"), CredentialsFileOptions{}); err == nil {
		t.Error("OpenCredentials of a missing file succeeded")
	}
}

// FuzzParseCredentials: any bytes either parse into credentials whose
// origins are in normal form, or fail with a *CredentialsError whose text
// repeats no header value of the input.
func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte(`{"https://a.example": {"headers": {"Authorization": "Bearer x"}}}`))
	f.Add([]byte(`{"http://127.0.0.1:8080": {"cert": "c.pem", "key": "c.key"}}`))
	f.Add([]byte(`{"https://A.example:443/": {"headers": {"X-Key": "1", "X-Other": "2"}}}`))
	f.Add([]byte(`{"https://a.example": {"headers": {"Host": "h"}}}`))
	f.Add([]byte(`{"https://a.example": "x"}`))
	f.Add([]byte(`[{"a":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCredentials(b, func(string) ([]byte, error) { return nil, os.ErrNotExist })
		if err != nil {
			var ce *CredentialsError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *CredentialsError", err, err)
			}
			return
		}
		for _, o := range c.Origins() {
			if n, err := ParseOrigin(o); err != nil || n != o {
				t.Fatalf("origin %q not in normal form (%q, %v)", o, n, err)
			}
			cr, _ := c.For(o)
			want := "client certificate"
			if !cr.HasCertificate() {
				var names []string
				for _, h := range cr.Headers() {
					if h.Value.Reveal() == "" {
						t.Fatalf("header %s with an empty value", h.Name)
					}
					names = append(names, h.Name)
				}
				want = "headers " + strings.Join(names, ", ")
			}
			if got := fmt.Sprintf("%v %s %#v", cr, cr, cr); got != want+" "+want+" "+want {
				t.Fatalf("credential prints %q, want its header names %q only", got, want)
			}
		}
	})
}

func TestGuardCheck(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		addr  string
		allow []netip.Prefix
		ok    bool
	}{
		{addr: "8.8.8.8", ok: true},
		{addr: "93.184.215.14", ok: true},
		{addr: "2606:4700:4700::1111", ok: true},
		{addr: "127.0.0.1"},
		{addr: "127.255.0.9"},
		{addr: "::1"},
		{addr: "::ffff:127.0.0.1"}, // IPv4-mapped loopback
		{addr: "::ffff:10.0.0.1"},
		{addr: "10.1.2.3"},
		{addr: "172.16.0.1"},
		{addr: "172.31.255.255"},
		{addr: "192.168.1.1"},
		{addr: "169.254.169.254"},
		{addr: "169.254.170.2"},
		{addr: "169.254.1.1"},
		{addr: "100.64.0.1"},
		{addr: "100.100.100.200"},
		{addr: "0.0.0.0"},
		{addr: "::"},
		{addr: "224.0.0.1"},
		{addr: "255.255.255.255"},
		{addr: "fc00::1"},
		{addr: "fd00:ec2::254"},
		{addr: "fe80::1"},
		{addr: "ff02::1"},
		{addr: "64:ff9b::a9fe:a9fe"}, // NAT64 of 169.254.169.254
		{addr: "64:ff9b::808:808", ok: true},
		{addr: "2002:0a00:0001::1"}, // 6to4 of 10.0.0.1
		{addr: "127.0.0.1", allow: []netip.Prefix{p("127.0.0.0/8")}, ok: true},
		{addr: "::1", allow: []netip.Prefix{p("127.0.0.0/8")}},
		{addr: "10.9.9.9", allow: []netip.Prefix{p("10.0.0.0/8")}, ok: true},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("169.254.0.0/16")}},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("0.0.0.0/0")}},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("169.254.169.254/32")}, ok: true},
		{addr: "169.254.1.1", allow: []netip.Prefix{p("169.254.0.0/16")}, ok: true},
	}
	for _, tc := range tests {
		err := guard{allow: tc.allow}.check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("check(%s) with allow %v = %v, want ok=%t", tc.addr, tc.allow, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ReasonRefusedAddress) {
			t.Errorf("check(%s) = %v, does not match ReasonRefusedAddress", tc.addr, err)
		}
	}
}

func TestGuardControlAddresses(t *testing.T) {
	g := guard{}
	for _, a := range []string{"127.0.0.1:80", "[::1]:443", "[fe80::1%eth0]:80", "garbage"} {
		if err := g.control("tcp", a, nil); err == nil {
			t.Errorf("control(%q) = nil, want refused", a)
		}
	}
	if err := g.control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Errorf("control(8.8.8.8:443) = %v", err)
	}
}

// The default guard refuses the loopback test server itself, by address and by
// a name that resolves to it.
func TestDefaultGuardRefusesLoopback(t *testing.T) {
	srv := httptest.NewServer(serveBody(string(cardJSON("1", true))))
	defer srv.Close()
	o := Options{TotalTimeout: 5 * time.Second, ConnectTimeout: 2 * time.Second}
	f := newFetcher(t, o)
	ctx := context.Background()

	_, err := f.Observe(ctx, srv.URL+"/card", false)
	fetchErr(t, err, ReasonRefusedAddress)

	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err = f.Fetch(ctx, Request{URL: "http://localhost:" + port + "/card"})
	fetchErr(t, err, ReasonRefusedAddress)

	if ln, lerr := net.Listen("tcp", "[::1]:0"); lerr == nil {
		v6 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: serveBody(string(cardJSON("1", true)))}}
		v6.Start()
		defer v6.Close()
		_, err = f.Fetch(ctx, Request{URL: v6.URL + "/card"})
		fetchErr(t, err, ReasonRefusedAddress)
	} else {
		t.Logf("no IPv6 loopback (%v): [::1] covered by TestGuardCheck only", lerr)
	}

	for _, u := range []string{
		"http://10.0.0.1/card",
		"http://192.168.1.1/.well-known/agent-card.json",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/",
		"http://100.100.100.200/",
		"http://0.0.0.0:" + port + "/",
	} {
		_, err := f.Fetch(ctx, Request{URL: u})
		fe := fetchErr(t, err, ReasonRefusedAddress)
		if !strings.Contains(fe.Error(), "refused") {
			t.Errorf("%s: error text %q", u, fe.Error())
		}
		assertRefusedByDialer(t, err, "")
	}
}

// assertRefusedByDialer checks that err comes from the guard in the dialer's
// Control hook (so connect(2) never ran), for addr when addr is not "".
func assertRefusedByDialer(t *testing.T, err error, addr string) {
	t.Helper()
	var re *refusedError
	if !errors.As(err, &re) {
		t.Fatalf("%v: not refused by the dial guard", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("%v: refusal is not a dial error", err)
	}
	if addr != "" && (op == nil || op.Addr == nil || op.Addr.String() != addr) {
		t.Errorf("refused dial of %v, want %s", op.Addr, addr)
	}
}

// hostileOptions bound every fetch tightly so hostile agents are cut short fast.
func hostileOptions() Options {
	o := testOptions(nil)
	o.ConnectTimeout = 200 * time.Millisecond
	o.TotalTimeout = 500 * time.Millisecond
	o.MaxBodyBytes = 64 << 10
	return o
}

// slack is what a bounded failure may take beyond its configured timeout. It
// is generous because tests share loaded machines (and run under -race); the
// hostile handlers hang until the client leaves, so an unbounded fetch would
// still show.
const slack = 4 * time.Second

func trickle(w http.ResponseWriter, r *http.Request, every time.Duration, b []byte) {
	fl := w.(http.Flusher)
	for i := 0; ; i++ {
		if _, err := w.Write(b[i%len(b) : i%len(b)+1]); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-time.After(every):
		case <-r.Context().Done():
			return
		}
	}
}

// rawServer serves every connection with a raw HTTP response written by fn.
func rawServer(t *testing.T, fn func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				fn(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/card"
}

// serveHostile starts the hostile endpoint of a test case, raw (a TCP server
// writing its own response) or else handler, and returns the URL to fetch
// (path on it).
func serveHostile(t *testing.T, handler http.HandlerFunc, raw func(c net.Conn), path string) string {
	t.Helper()
	if raw != nil {
		return rawServer(t, raw)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL + path
}

// Hostile handlers that any endpoint the Fetcher reads (cards, key sets)
// may turn out to be.

// hang never answers: it holds the request until the client leaves.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// hugeChunked streams up to 4 MiB without a Content-Length.
func hugeChunked(w http.ResponseWriter, r *http.Request) {
	chunk := bytes.Repeat([]byte(" "), 32<<10)
	for range 128 { // 4 MiB at most
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// hugeContentLength declares 100 MiB and sends one byte.
func hugeContentLength(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "104857600")
	w.WriteHeader(200)
	_, _ = w.Write([]byte("{"))
}

// gzipBomb serves 8 MiB of zeros (128 times the hostile MaxBodyBytes) as
// about 8 KiB of gzip.
func gzipBomb() http.HandlerFunc {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	chunk := make([]byte, 1<<20)
	for range 8 {
		_, _ = zw.Write(chunk)
	}
	_ = zw.Close()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(b.Bytes())
	}
}

// redirectTo answers every request with a redirect to url.
func redirectTo(url string, code int) http.HandlerFunc {
	return http.RedirectHandler(url, code).ServeHTTP
}

func TestHostileAgents(t *testing.T) {
	deep := `{"name":"deep","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`

	tests := []struct {
		name       string
		handler    http.HandlerFunc
		raw        func(c net.Conn) // instead of handler: a raw TCP server
		want       Reason
		wantStatus int
	}{
		{
			name:    "slow headers",
			handler: hang,
			want:    ReasonTimeout,
		},
		{
			name: "slow body (trickle)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				trickle(w, r, 20*time.Millisecond, cardJSON("1", true))
			},
			want:       ReasonTimeout,
			wantStatus: 200,
		},
		{
			name:       "huge chunked body",
			handler:    hugeChunked,
			want:       ReasonTooLarge,
			wantStatus: 200,
		},
		{
			name:       "huge declared Content-Length",
			handler:    hugeContentLength,
			want:       ReasonTooLarge,
			wantStatus: 200,
		},
		{
			name: "Content-Length lies low, body streams on",
			raw: func(c net.Conn) {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 16\r\nConnection: close\r\n\r\n")
				chunk := bytes.Repeat([]byte(`{"name":"x","a":`), 4096)
				for range 64 { // 4 MiB at most
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			},
			want:       ReasonInvalidJSON, // the declared 16 bytes are read, no more
			wantStatus: 200,
		},
		{
			name: "Content-Length lies high, connection closes",
			raw: func(c net.Conn) {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n{\"name\":")
			},
			want:       ReasonConnect,
			wantStatus: 200,
		},
		{
			name:       "gzip bomb",
			handler:    gzipBomb(),
			want:       ReasonTooLarge,
			wantStatus: 200,
		},
		{
			name: "redirect loop",
			handler: func(w http.ResponseWriter, r *http.Request) {
				next := "/a"
				if r.URL.Path == "/a" {
					next = "/b"
				}
				http.Redirect(w, r, next, http.StatusFound)
			},
			want: ReasonTooManyRedirects,
		},
		{
			name:    "redirect to cloud metadata",
			handler: redirectTo("http://169.254.169.254/latest/meta-data/iam/", http.StatusFound),
			want:    ReasonRefusedAddress,
		},
		{
			name:    "redirect to IPv6 cloud metadata",
			handler: redirectTo("http://[fd00:ec2::254]/latest/meta-data/", http.StatusMovedPermanently),
			want:    ReasonRefusedAddress,
		},
		{
			name:    "redirect to a private address",
			handler: redirectTo("http://10.0.0.1:8080/admin", http.StatusTemporaryRedirect),
			want:    ReasonRefusedAddress,
		},
		{
			name:    "redirect to file:",
			handler: redirectTo("file:///etc/passwd", http.StatusFound),
			want:    ReasonRedirectRefused,
		},
		{
			name:       "invalid JSON",
			handler:    serveBody(`{"name": "x", `),
			want:       ReasonInvalidJSON,
			wantStatus: 200,
		},
		{
			name:       "deep nesting",
			handler:    serveBody(deep),
			want:       ReasonTooDeep,
			wantStatus: 200,
		},
		{
			name:       "duplicate keys",
			handler:    serveBody(`{"name":"a","version":"1","name":"b"}`),
			want:       ReasonDuplicateKeys,
			wantStatus: 200,
		},
		{
			name:       "invalid UTF-8",
			handler:    serveBody("{\"name\":\"caf\xe9\"}"),
			want:       ReasonInvalidUTF8,
			wantStatus: 200,
		},
		{
			name:       "JSON but not an object",
			handler:    serveBody(`[{"name":"a"}]`),
			want:       ReasonNotACard,
			wantStatus: 200,
		},
		{
			name: "500",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "boom", http.StatusInternalServerError)
			},
			want:       ReasonStatus,
			wantStatus: 500,
		},
		{
			name: "304 to an unconditional request",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotModified)
			},
			want:       ReasonStatus,
			wantStatus: 304,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := serveHostile(t, tc.handler, tc.raw, "/card")
			o := hostileOptions()
			f := newFetcher(t, o)
			start := time.Now()
			obs, err := f.Observe(context.Background(), url, false)
			elapsed := time.Since(start)
			fe := fetchErr(t, err, tc.want)
			if fe.Status != tc.wantStatus {
				t.Errorf("Status = %d, want %d", fe.Status, tc.wantStatus)
			}
			if fe.URL != url || obs.Card != nil {
				t.Errorf("URL = %q (want %q), Card = %v", fe.URL, url, obs.Card)
			}
			if limit := o.TotalTimeout + slack; elapsed > limit {
				t.Errorf("took %v, want at most %v", elapsed, limit)
			}
		})
	}
}

func serveBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

// The metadata redirect is refused by the dialer's Control hook, which runs
// after the socket is made and before connect(2): no packet leaves.
func TestRedirectToMetadataNeverConnects(t *testing.T) {
	srv := httptest.NewServer(redirectTo("http://169.254.169.254/latest/meta-data/", http.StatusFound))
	defer srv.Close()
	f := newFetcher(t, hostileOptions())
	_, err := f.Fetch(context.Background(), Request{URL: srv.URL})
	fetchErr(t, err, ReasonRefusedAddress)
	assertRefusedByDialer(t, err, "169.254.169.254:80")
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(serveBody(string(cardJSON("1", true))))
	defer srv.Close()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	// The reason is under test, not the clock: a handshake on a loaded
	// machine under -race can outlast testOptions' 2 s (then the reason is
	// timeout, not tls).
	unhurried := func() Options {
		o := testOptions(nil)
		o.ConnectTimeout, o.TotalTimeout = 30*time.Second, time.Minute
		return o
	}
	t.Run("unknown CA", func(t *testing.T) {
		f := newFetcher(t, unhurried())
		_, err := f.Fetch(context.Background(), Request{URL: srv.URL})
		fetchErr(t, err, ReasonTLS)
	})
	t.Run("trusted test CA", func(t *testing.T) {
		o := unhurried()
		o.TLSConfig = &tls.Config{RootCAs: roots}
		f := newFetcher(t, o)
		obs, err := f.Fetch(context.Background(), Request{URL: srv.URL})
		if err != nil || obs.Card == nil {
			t.Fatalf("Fetch: %v", err)
		}
	})
	t.Run("https to http downgrade", func(t *testing.T) {
		plain := httptest.NewServer(serveBody(string(cardJSON("1", true))))
		defer plain.Close()
		redir := httptest.NewTLSServer(http.RedirectHandler(plain.URL, http.StatusFound))
		defer redir.Close()
		o := unhurried()
		o.TLSConfig = &tls.Config{RootCAs: redir.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		f := newFetcher(t, o)
		_, err := f.Fetch(context.Background(), Request{URL: redir.URL})
		fetchErr(t, err, ReasonRedirectRefused)
	})
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	f := newFetcher(t, hostileOptions())
	_, err = f.Fetch(context.Background(), Request{URL: "http://" + addr + "/card"})
	fetchErr(t, err, ReasonConnect)
}

func TestDNSFailure(t *testing.T) {
	f := newFetcher(t, hostileOptions())
	start := time.Now()
	_, err := f.Fetch(context.Background(), Request{URL: "http://no-such-agent.invalid/card"})
	fe, ok := asFetchError(err)
	if !ok {
		t.Fatalf("error %v is not a *FetchError", err)
	}
	// Without a resolver the lookup may time out instead; either is typed.
	if fe.Reason != ReasonDNS && fe.Reason != ReasonTimeout {
		t.Errorf("reason = %q, want dns (or timeout)", fe.Reason)
	}
	if el := time.Since(start); el > hostileOptions().TotalTimeout+slack {
		t.Errorf("took %v", el)
	}
}

func TestInvalidURL(t *testing.T) {
	f := newFetcher(t, hostileOptions())
	for _, u := range []string{"", "not a url", "ftp://agent.example/card", "file:///etc/passwd", "http:///nohost", "http://[::1"} {
		_, err := f.Observe(context.Background(), u, false)
		fetchErr(t, err, ReasonInvalidURL)
	}
}

// TestFetchAgent checks the one-shot look at an agent: the well-known
// resolution and legacy fallback of ObserveAgent, the workers' fixed headers
// and guard, and no lease or memory (every call asks again).
func TestFetchAgent(t *testing.T) {
	var modern, legacy atomic.Int64
	var headers atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers.Store(r.Header.Clone())
		switch r.URL.Path {
		case "/agents/a" + WellKnownPath:
			modern.Add(1)
			http.Error(w, "gone", http.StatusGone)
		case "/agents/a" + LegacyWellKnownPath, "/card.json":
			legacy.Add(1)
			w.Header().Set("ETag", `"v2"`)
			w.Header().Add("Cache-Control", "max-age=60")
			w.Header().Add("Cache-Control", "must-revalidate")
			_, _ = w.Write(cardJSON("0.2", false))
		case "/down" + WellKnownPath:
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := newFetcher(t, testOptions(newClock()))
	ctx := context.Background()

	for i := range 2 {
		obs, err := f.FetchAgent(ctx, srv.URL+"/agents/a/", "")
		if err != nil {
			t.Fatalf("FetchAgent %d: %v", i, err)
		}
		if want := srv.URL + "/agents/a" + LegacyWellKnownPath; obs.CardURL != want || obs.Card == nil || obs.Digest == "" ||
			obs.ETag != `"v2"` || obs.CacheControl != "max-age=60, must-revalidate" || obs.Status != http.StatusOK {
			t.Fatalf("FetchAgent %d = %+v, want the legacy card with its ETag and Cache-Control", i, obs)
		}
	}
	if modern.Load() != 2 || legacy.Load() != 2 {
		t.Errorf("agent-card.json hits %d, agent.json hits %d; want 2 and 2 (nothing remembered)", modern.Load(), legacy.Load())
	}
	h := headers.Load().(http.Header)
	if h.Get("A2A-Version") != DefaultA2AVersion || h.Get("Accept") != DefaultAccept || h.Get("User-Agent") != DefaultUserAgent {
		t.Errorf("headers = %v, want the workers' fixed headers", h)
	}

	// An explicit card URL is fetched as it is.
	if obs, err := f.FetchAgent(ctx, srv.URL, srv.URL+"/card.json"); err != nil || obs.CardURL != srv.URL+"/card.json" {
		t.Errorf("FetchAgent(card URL) = %+v, %v", obs, err)
	}
	// A 500 is not a reason to fall back; nothing anywhere is the first 404.
	fe := fetchErr(t, func() error { _, err := f.FetchAgent(ctx, srv.URL+"/down", ""); return err }(), ReasonStatus)
	if fe.Status != http.StatusInternalServerError {
		t.Errorf("Status = %d, want 500", fe.Status)
	}
	fe = fetchErr(t, func() error { _, err := f.FetchAgent(ctx, srv.URL+"/nowhere", ""); return err }(), ReasonStatus)
	if fe.Status != http.StatusNotFound || fe.URL != srv.URL+"/nowhere"+WellKnownPath {
		t.Errorf("FetchError = %+v, want the 404 of agent-card.json", fe)
	}

	// The guard applies: without Allow, loopback is refused.
	strict := newFetcher(t, Options{})
	_, err := strict.FetchAgent(ctx, srv.URL, "")
	fetchErr(t, err, ReasonRefusedAddress)
}

// A fleet larger than the old idle pool (256 connections) revalidates on
// the connections its first fetches opened: one dial per agent, however
// often it is fetched.
func TestFleetReusesConnections(t *testing.T) {
	const agents, rounds = 300, 3
	var dials atomic.Int64
	body := cardJSON("1.0.0", true)
	urls := make([]string, agents)
	for i := range agents {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				dials.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		urls[i] = srv.URL + WellKnownPath
	}
	f := newFetcher(t, testOptions(nil))
	for r := range rounds {
		for _, u := range urls {
			if _, err := f.Fetch(context.Background(), Request{URL: u}); err != nil {
				t.Fatalf("round %d, %s: %v", r, u, err)
			}
		}
	}
	if n := dials.Load(); n != agents {
		t.Fatalf("%d agents fetched %d times each: %d connections accepted, want %d (one per agent)", agents, rounds, n, agents)
	}
}

// TestUnreachableReasons: the reasons a card.unreachable may carry are every
// Reason but ReasonCanceled, in the same order, each with a description.
// (events' contract test compares the schema and schemas/README.md with this
// list.)
func TestUnreachableReasons(t *testing.T) {
	var want []Reason
	for _, r := range Reasons() {
		if r != ReasonCanceled {
			want = append(want, r)
		}
	}
	got := UnreachableReasons()
	if !slices.Equal(got, want) {
		t.Errorf("UnreachableReasons() = %v, want %v", got, want)
	}
	for _, r := range got {
		if r.Description() == "" || !errors.Is(&FetchError{Reason: r}, r) {
			t.Errorf("reason %q: description %q, matched by its errors: %v; want both", r, r.Description(), errors.Is(&FetchError{Reason: r}, r))
		}
	}
	if d := ReasonCanceled.Description(); d != "" {
		t.Errorf("ReasonCanceled.Description() = %q, want none (never published)", d)
	}
	if d := Reason("no-such-reason").Description(); d != "" {
		t.Errorf("unknown reason's Description() = %q, want none", d)
	}
}

func (s testSigner) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.key.Public(), KeyID: s.kid, Use: "sig"}
}

func thumbprint(t testing.TB, s testSigner) string {
	t.Helper()
	k, err := signature.NewKey(s.jwk())
	if err != nil {
		t.Fatal(err)
	}
	return k.Thumbprint
}

// TestObserveAgentSignatures: ObserveAgent says who signed each body it
// observes, verifying a body once however often it is observed; a card
// re-signed with the same content (the same digest) is observed with its
// new signatures, from a fetch and from the lease after it.
func TestObserveAgentSignatures(t *testing.T) {
	clk := newClock()
	a, b := newTestSigner(t, "a"), newTestSigner(t, "b")
	keys := newJWKSServer(t, jwksJSON(t, a.jwk(), b.jwk()), "max-age=600")
	card := cardJSON("1", true)
	signedA := a.sign(t, card, keys.url())
	agent := newAgent(t, signedA, `"a"`, "max-age=60")
	o := testOptions(clk)
	o.Signatures = SignatureOptions{JKU: JKUAny}
	f := newFetcher(t, o)
	cardURL := agent.url(WellKnownPath)
	ctx := context.Background()
	observe := func(what string) Observation {
		t.Helper()
		obs, err := f.ObserveAgent(ctx, agent.url("/"), "", false)
		if err != nil {
			t.Fatalf("%s: ObserveAgent = %v", what, err)
		}
		if obs.CardURL != cardURL {
			t.Fatalf("%s: card URL %s", what, obs.CardURL)
		}
		return obs
	}
	want := func(what string, obs Observation, kid string, verified bool, reason string) {
		t.Helper()
		if len(obs.Signatures) != 1 {
			t.Fatalf("%s: %d signatures, want 1: %+v", what, len(obs.Signatures), obs.Signatures)
		}
		s := obs.Signatures[0]
		if s.KeyID != kid || s.Verified != verified || s.Reason != reason || s.JKU != keys.url() || s.Alg != "ES256" {
			t.Errorf("%s: signature %+v; want kid %s verified %v (%s) with jku %s", what, s, kid, verified, reason, keys.url())
		}
	}

	first := observe("signed by a")
	want("signed by a", first, "a", true, "verified")
	if s := first.Signatures[0]; s.Thumbprint != thumbprint(t, a) || s.Source != "jku" {
		t.Errorf("signed by a: thumbprint %s source %s; want %s from the jku", s.Thumbprint, s.Source, thumbprint(t, a))
	}
	lease := observe("from the lease")
	if !lease.FromLease {
		t.Fatal("the second observation was not the lease's")
	}
	want("from the lease", lease, "a", true, "verified")
	if n := f.verify.verified.Load(); n != 1 {
		t.Errorf("one body observed twice was verified %d times, want once", n)
	}

	agent.set(b.sign(t, card, keys.url()), `"b"`, "max-age=60")
	clk.Advance(61 * time.Second)
	resigned := observe("re-signed by b")
	if resigned.Digest != first.Digest {
		t.Fatalf("re-signing changed the digest: %s, %s", first.Digest, resigned.Digest)
	}
	want("re-signed by b", resigned, "b", true, "verified")
	want("re-signed by b, from the lease", observe("re-signed by b, from the lease"), "b", true, "verified")

	tampered := bytes.Replace(b.sign(t, card, keys.url()), []byte(`"description":"test"`), []byte(`"description":"changed"`), 1)
	agent.set(tampered, `"t"`, "max-age=60")
	clk.Advance(61 * time.Second)
	bad := observe("tampered")
	want("tampered", bad, "b", false, "invalid-signature")
	if bad.Digest == first.Digest {
		t.Error("the tampered card has the signed card's digest")
	}

	before := f.verify.verified.Load()
	agent.set(card, `"u"`, "max-age=60")
	clk.Advance(61 * time.Second)
	if unsigned := observe("unsigned"); unsigned.Signatures != nil || unsigned.Digest != first.Digest {
		t.Errorf("unsigned: signatures %+v, digest %s", unsigned.Signatures, unsigned.Digest)
	}
	if n := f.verify.verified.Load(); n != before {
		t.Errorf("an unsigned card was verified (%d verifications)", n-before)
	}
	if n := keys.requests.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once (max-age=600)", n)
	}
}

// TestVerifyKeySources: which keys verify, by SignatureOptions.
func TestVerifyKeySources(t *testing.T) {
	a, b := newTestSigner(t, "a"), newTestSigner(t, "b")
	keys := newJWKSServer(t, jwksJSON(t, a.jwk(), b.jwk()), "max-age=600")
	operator := newJWKSServer(t, jwksJSON(t, a.jwk()), "max-age=600")
	fileSet, err := signature.ParseJWKS(jwksJSON(t, a.jwk()))
	if err != nil {
		t.Fatal(err)
	}
	card := cardJSON("1", true)
	byA, byB := a.sign(t, card, keys.url()), b.sign(t, card, keys.url())
	httpsJKU := b.sign(t, card, "https://127.0.0.1:1/jwks.json")

	for _, tc := range []struct {
		name   string
		opts   SignatureOptions
		raw    []byte
		source string
		reason string
	}{
		{name: "jku over http refused by default", opts: SignatureOptions{}, raw: byB, reason: "keys-unavailable"},
		{name: "jku over http allowed", opts: SignatureOptions{JKU: JKUAny}, raw: byB, source: "jku", reason: "verified"},
		{name: "jku off", opts: SignatureOptions{JKU: JKUOff}, raw: byB, reason: "no-key"},
		{name: "trusted file", opts: SignatureOptions{JKU: JKUOff, Trusted: fileSet}, raw: byA, source: "trusted", reason: "verified"},
		{name: "trusted URL", opts: SignatureOptions{JKU: JKUOff, TrustedURL: operator.url()}, raw: byA, source: "trusted", reason: "verified"},
		{name: "trusted file and URL", opts: SignatureOptions{JKU: JKUOff, Trusted: signature.NewKeySet(), TrustedURL: operator.url()},
			raw: byA, source: "trusted", reason: "verified"},
		{name: "the trusted set answers for its kids", opts: SignatureOptions{JKU: JKUAny, Trusted: fileSet}, raw: byA, source: "trusted", reason: "verified"},
		{name: "https jku, unreachable", opts: SignatureOptions{}, raw: httpsJKU, reason: "keys-unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(newClock())
			o.Signatures = tc.opts
			sigs := newFetcher(t, o).Verify(context.Background(), tc.raw)
			if len(sigs) != 1 || sigs[0].Reason != tc.reason || sigs[0].Source != tc.source || sigs[0].Verified != (tc.reason == "verified") {
				t.Errorf("Verify = %+v; want %s from %q", sigs, tc.reason, tc.source)
			}
		})
	}

	f := newFetcher(t, testOptions(newClock()))
	if sigs := f.Verify(context.Background(), card); sigs != nil {
		t.Errorf("Verify(unsigned) = %+v", sigs)
	}
	if sigs := f.Verify(context.Background(), []byte("not json")); sigs != nil {
		t.Errorf("Verify(not a card) = %+v", sigs)
	}
}

// An outcome without keys is kept briefly: once the key set is back, the
// card verifies without waiting for ResultTTL.
func TestVerifyKeysUnavailableIsShortLived(t *testing.T) {
	clk := newClock()
	a := newTestSigner(t, "a")
	operator := newJWKSServer(t, []byte(`{"not":"a key set"}`), "")
	signed := a.sign(t, cardJSON("1", true), "")
	o := testOptions(clk)
	o.Signatures = SignatureOptions{TrustedURL: operator.url(), JKU: JKUOff}
	f := newFetcher(t, o)
	ctx := context.Background()
	reason := func() string {
		sigs := f.Verify(ctx, signed)
		if len(sigs) != 1 {
			t.Fatalf("Verify = %+v", sigs)
		}
		return sigs[0].Reason
	}
	if r := reason(); r != "keys-unavailable" {
		t.Fatalf("key set not a key set: %s, want keys-unavailable", r)
	}
	operator.set(jwksJSON(t, a.jwk()), "max-age=600")
	if r := reason(); r != "keys-unavailable" {
		t.Errorf("within FailureTTL: %s, want the kept keys-unavailable", r)
	}
	clk.Advance(DefaultJWKSFailureTTL + time.Second)
	if r := reason(); r != "verified" {
		t.Errorf("after FailureTTL: %s, want verified", r)
	}
	n := f.verify.verified.Load()
	clk.Advance(DefaultJWKSMaxTTL - time.Minute)
	if r := reason(); r != "verified" || f.verify.verified.Load() != n {
		t.Errorf("a verified outcome within ResultTTL: %s after %d more verifications, want kept", r, f.verify.verified.Load()-n)
	}
	clk.Advance(2 * time.Minute)
	if reason(); f.verify.verified.Load() != n+1 {
		t.Error("a verified outcome older than ResultTTL was not verified again")
	}
}

func TestSignatureOptionsValidate(t *testing.T) {
	for _, o := range []SignatureOptions{
		{JKU: "sometimes"},
		{TrustedURL: "ftp://keys.example/jwks.json"},
		{ResultTTL: -1},
		{JWKS: JWKSOptions{MaxEntries: -1}},
	} {
		opts := testOptions(nil)
		opts.Signatures = o
		if f, err := New(opts); err == nil {
			f.Close()
			t.Errorf("New(Signatures %+v) = nil error", o)
		}
	}
	for in, want := range map[string]JKUPolicy{"": JKUHTTPS, "https": JKUHTTPS, "any": JKUAny, "off": JKUOff} {
		if got, err := ParseJKUPolicy(in); got != want || err != nil {
			t.Errorf("ParseJKUPolicy(%q) = %q, %v", in, got, err)
		}
	}
}

func TestSignaturesConversion(t *testing.T) {
	got := Signatures([]signature.Result{{Index: 0, KeyID: "k", Alg: "EdDSA", JKU: "https://x/j", Typ: "JOSE", Thumbprint: "tp",
		Source: signature.SourceJKU, Form: signature.FormSDK, Verified: true, Reason: signature.ReasonVerified, Detail: "d"}})
	want := []detector.Signature{{KeyID: "k", Alg: "EdDSA", JKU: "https://x/j", Thumbprint: "tp", Source: "jku", Verified: true, Reason: "verified"}}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("Signatures() = %+v, want %+v", got, want)
	}
	if Signatures(nil) != nil {
		t.Error("Signatures(nil) is not nil")
	}
}

// BenchmarkObserveAgentSigned is an observation of a signed card answered
// by a fresh lease: the verification outcome is kept per body, so it costs
// a SHA-256 of the body over BenchmarkObserveLeaseHit.
func BenchmarkObserveAgentSigned(b *testing.B) {
	s := newTestSigner(b, "bench")
	keys := newJWKSServer(b, s.jwks, "max-age=3600")
	a := newAgent(b, s.sign(b, cardJSON("1", true), keys.url()), `"v1"`, "max-age=300")
	f, err := New(Options{Allow: loopback, Signatures: SignatureOptions{JKU: JKUAny}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	if obs, err := f.ObserveAgent(ctx, "", a.url("/card"), false); err != nil || !obs.Signatures[0].Verified {
		b.Fatalf("ObserveAgent = %+v, %v", obs.Signatures, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ObserveAgent(ctx, "", a.url("/card"), false); err != nil {
			b.Fatal(err)
		}
	}
}

// bigSignedCard is a card of about 1 MiB carrying n signatures whose
// protected headers each name a 7,100-byte kid (the shape of issue 19,
// row 3: 106 signatures keep 0.84 MiB of strings in one verification
// outcome). version makes the body, and so the outcome's cache key, unique.
func bigSignedCard(t testing.TB, s testSigner, version string, n int) []byte {
	t.Helper()
	kid := strings.Repeat("k", 7100)
	signer := testSigner{key: s.key, kid: kid}
	one := signer.sign(t, cardJSON(version, true), "")
	i := bytes.Index(one, []byte(`"signatures":[`))
	if i < 0 {
		t.Fatalf("no signatures in %s", one)
	}
	start := i + len(`"signatures":[`)
	end := start + bytes.IndexByte(one[start:], ']') // entries hold no arrays
	entry := one[start:end]
	var b bytes.Buffer
	b.Write(one[:start])
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(entry)
	}
	b.Write(one[end:])
	return b.Bytes()
}

// retained is the live heap after a full collection.
func retained() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestAdversarySignatureCacheBytes: verification outcomes of maximum-size
// signed cards (106 signatures with 7,100-byte kids each) fill the
// signature-result cache of a Fetcher with default options; the heap it
// retains stays within DefaultSignatureCacheBytes (32 MiB), where a cache
// bounded by count only (4,096 entries) keeps every one of them.
func TestAdversarySignatureCacheBytes(t *testing.T) {
	s := newTestSigner(t, "a")
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUOff, Trusted: signature.NewKeySet()} // no key: "no-key", no crypto
	f := newFetcher(t, o)
	ctx := context.Background()
	const cards, bound = 48, 32 << 20
	before := retained()
	perEntry := 0
	for i := range cards {
		raw := bigSignedCard(t, s, fmt.Sprint(i), 106)
		sigs := f.Verify(ctx, raw)
		if len(raw) > 1<<20 || len(sigs) == 0 {
			t.Fatalf("Verify(%d bytes) = %d signatures, want those of a card of at most 1 MiB", len(raw), len(sigs))
		}
		if i == 0 {
			for _, s := range sigs {
				perEntry += len(s.KeyID) + len(s.Alg) + len(s.Reason)
			}
		}
	}
	runtime.KeepAlive(f)
	after := retained()
	grew := int64(after) - int64(before)
	t.Logf("%d outcomes of %.2f MiB of strings each verified: the heap grew by %.1f MiB (bound %d MiB; a full count-bounded cache would keep %.1f GiB)",
		cards, float64(perEntry)/(1<<20), float64(grew)/(1<<20), bound>>20, float64(perEntry)*DefaultMaxSignatureResults/(1<<30))
	if grew > bound+bound/16 {
		t.Errorf("the signature-result cache retains %.1f MiB after %d outcomes of %.2f MiB, want at most %d MiB (+1/16 slack)",
			float64(grew)/(1<<20), cards, float64(perEntry)/(1<<20), bound>>20)
	}
}

// TestVerifyCacheBytes: the outcomes kept are bounded by CacheBytes as
// entrySize counts them, the least recently used evicted first; one larger
// than the bound is not kept; replacing or expiring an outcome gives its
// bytes back.
func TestVerifyCacheBytes(t *testing.T) {
	clk := newClock()
	o := testOptions(clk)
	sig := func(kid int) []detector.Signature {
		return []detector.Signature{{KeyID: strings.Repeat("k", kid), Alg: "ES256", Reason: "no-key"}}
	}
	size := entrySize(sig(10_000))
	o.Signatures = SignatureOptions{CacheBytes: 3*size + size/2}
	v := newFetcher(t, o).verify
	key := func(i int) [32]byte { return resultKey("", []byte(fmt.Sprint(i))) }
	check := func(what string, wantN int) {
		t.Helper()
		if n, b := v.Len(); n != wantN || b > o.Signatures.CacheBytes {
			t.Errorf("%s: %d outcomes of %d bytes, want %d within %d", what, n, b, wantN, o.Signatures.CacheBytes)
		}
		if err := v.results.check(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	for i := range 3 {
		v.put(key(i), cloneSignatures(sig(10_000)), time.Hour)
	}
	check("three", 3)
	v.get(key(0)) // 1 is now the least recently used
	v.put(key(3), cloneSignatures(sig(10_000)), time.Hour)
	check("a fourth evicts one", 3)
	if _, ok := v.get(key(1)); ok {
		t.Error("the least recently used outcome was kept")
	}
	if _, ok := v.get(key(0)); !ok {
		t.Error("a recently used outcome was evicted")
	}
	v.put(key(9), cloneSignatures(sig(int(4*size))), time.Hour)
	check("one larger than the bound", 3)
	if _, ok := v.get(key(9)); ok {
		t.Error("an outcome larger than CacheBytes was kept")
	}
	v.put(key(0), cloneSignatures(sig(10)), time.Hour)
	check("replaced by a small one", 3)
	clk.Advance(2 * time.Hour)
	for i := range 4 {
		v.get(key(i))
	}
	check("expired", 0)
	if got := entrySize(sig(100_000)); got < 100_000 {
		t.Errorf("entrySize of a 100,000-byte kid = %d", got)
	}
	if o := (SignatureOptions{CacheBytes: -1}); o.validate() == nil {
		t.Error("a negative CacheBytes validates")
	}
}

// FuzzSignatureCacheBytes: whatever sequence of outcomes of whatever sizes
// is kept, looked up or expired, the signature-result cache stays within
// CacheBytes and MaxResults, and its byte count is the sum of its entries.
// Each pair of input bytes is one step: op (put, get, advance the clock)
// and key or size.
func FuzzSignatureCacheBytes(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 1, 1, 0, 200, 2, 9, 1, 2})
	f.Add([]byte{0, 255, 0, 255, 0, 255, 0, 255})
	f.Add([]byte{0, 7, 0, 7, 0, 7, 2, 255, 1, 7})
	f.Fuzz(func(t *testing.T, steps []byte) {
		clk := newClock()
		o := testOptions(clk)
		o.Signatures = SignatureOptions{CacheBytes: 64 << 10, MaxResults: 8}
		fe, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer fe.Close()
		v := fe.verify
		for i := 0; i+1 < len(steps); i += 2 {
			op, arg := steps[i]%3, int(steps[i+1])
			key := resultKey("", []byte{byte(arg % 16)})
			switch op {
			case 0:
				sigs := []detector.Signature{{KeyID: strings.Repeat("k", arg*300), Alg: "ES256", Reason: "no-key"}}
				v.put(key, cloneSignatures(sigs), time.Duration(arg)*time.Second)
			case 1:
				v.get(key)
			case 2:
				clk.Advance(time.Duration(arg) * time.Second)
			}
			if n, b := v.Len(); n > o.Signatures.MaxResults || b > o.Signatures.CacheBytes {
				t.Fatalf("step %d: %d outcomes of %d bytes; bounds %d outcomes, %d bytes", i/2, n, b, o.Signatures.MaxResults, o.Signatures.CacheBytes)
			}
			if err := v.results.check(); err != nil {
				t.Fatalf("step %d: %v", i/2, err)
			}
		}
	})
}

// TestVerifyCallerDeadlineNotRemembered: a caller whose own deadline ends
// while a key set is being fetched learns nothing about that key set, so
// the failure is not remembered for anyone. Otherwise whoever writes a card
// (an agent, or any client in a2a.task.submitted) can time its signatures'
// lookups — slow jku hosts of its own first, then a jku naming the key set
// the operator trusts for another agent — so that the handler's deadline
// falls during that fetch, and every card of that agent is then
// keys-unavailable (under --require-signed-cards: signature-required,
// abort) for FailureTTL.
func TestVerifyCallerDeadlineNotRemembered(t *testing.T) {
	a, attacker := newTestSigner(t, "a"), newTestSigner(t, "x")
	trusted := newJWKSServer(t, jwksJSON(t, a.jwk()), "max-age=600")
	const agentA = "https://a.example"
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUAny, Scoped: map[string]TrustedKeys{agentA: {URL: trusted.url()}}}
	f := newFetcher(t, o)
	card := cardJSON("1", true)

	release := trusted.hold()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	hostile := f.VerifyAt(ctx, "https://b.example/.well-known/agent-card.json", attacker.sign(t, card, trusted.url()))
	if len(hostile) != 1 || hostile[0].Reason != "keys-unavailable" {
		t.Fatalf("the hostile card: %+v, want keys-unavailable (its caller's deadline)", hostile)
	}
	release()

	sigs := f.VerifyAt(context.Background(), agentA+"/.well-known/agent-card.json", a.sign(t, card, ""))
	if len(sigs) != 1 || sigs[0].Reason != "verified" || sigs[0].Source != "trusted" {
		t.Errorf("a's own card after another caller's deadline: %+v, want verified by the key trusted for a", sigs)
	}
}

// TestVerifyEscapedSignaturesMember: JSON lets a card spell its
// "signatures" member with escapes ("signatur\u0065s" is the same key to
// every parser, the digest's and the detector's included). A card so
// spelt is still verified: read as unsigned, a card edited after signing
// would have no signature findings at all (the detector sees a signed card
// whose signatures nobody checked), and signature-invalid would never fire.
func TestVerifyEscapedSignaturesMember(t *testing.T) {
	a := newTestSigner(t, "a")
	keys := newJWKSServer(t, jwksJSON(t, a.jwk()), "max-age=600")
	signed := a.sign(t, cardJSON("1", true), keys.url())
	if !bytes.Contains(signed, []byte(`"signatures":`)) {
		t.Fatalf("signed card has no signatures member: %s", signed)
	}
	escaped := bytes.Replace(signed, []byte(`"signatures":`), []byte(`"signatur\u0065s":`), 1)
	tampered := bytes.Replace(escaped, []byte(`"description":"test"`), []byte(`"description":"changed"`), 1)
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUAny}
	f := newFetcher(t, o)
	for _, tc := range []struct {
		name   string
		raw    []byte
		reason string
	}{
		{"escaped, as signed", escaped, "verified"},
		{"escaped, edited after signing", tampered, "invalid-signature"},
	} {
		sigs := f.VerifyAt(context.Background(), "", tc.raw)
		if len(sigs) != 1 || sigs[0].Reason != tc.reason {
			t.Errorf("%s: VerifyAt = %+v; want one signature, %s", tc.name, sigs, tc.reason)
		}
	}
}

// TestVerifyJKUsPerCard: whoever writes a card (an agent, or any client in
// a2a.task.submitted) chooses its signatures' jku URLs, and each distinct
// one is a fetch of up to TotalTimeout: sixteen signatures naming sixteen
// URLs on a host that stalls hold the handler for sixteen timeouts — past
// the worker's handler deadline — however few public-key operations the
// card costs. A card's signatures send the Fetcher to at most
// maxJKUsPerCard distinct jku URLs; the others are keys-unavailable
// (unverified, never trusted), and the key sets the operator trusts still
// answer every signature.
func TestVerifyJKUsPerCard(t *testing.T) {
	x, a := newTestSigner(t, "x"), newTestSigner(t, "a")
	other := newTestSigner(t, "other")
	sets := newJWKSServer(t, jwksJSON(t, other.jwk()), "max-age=600") // lacks kid x: every set is fetched
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUAny, Trusted: keySetOf(t, a)}
	f := newFetcher(t, o)
	card := cardJSON("1", true)
	for i := range 15 {
		card = x.sign(t, card, fmt.Sprintf("%s?n=%d", sets.url(), i))
	}
	card = a.sign(t, card, fmt.Sprintf("%s?n=last", sets.url()))
	sigs := f.VerifyAt(context.Background(), "", card)
	if len(sigs) != 16 {
		t.Fatalf("VerifyAt = %d signatures, want 16", len(sigs))
	}
	if n := sets.requests.Load(); n > maxJKUsPerCard {
		t.Errorf("one card's signatures made %d key set fetches, want at most %d", n, maxJKUsPerCard)
	}
	for i, s := range sigs[:15] {
		want := "no-key"
		if i >= maxJKUsPerCard {
			want = "keys-unavailable"
		}
		if s.Reason != want {
			t.Errorf("signature %d: %s, want %s", i, s.Reason, want)
		}
	}
	if s := sigs[15]; !s.Trusted() {
		t.Errorf("the signature by the trusted key, after the limit: %+v, want verified by it", s)
	}
}

func keySetOf(t *testing.T, signers ...testSigner) signature.Keys {
	t.Helper()
	var jwks []jose.JSONWebKey
	for _, s := range signers {
		jwks = append(jwks, s.jwk())
	}
	set, err := signature.ParseJWKS(jwksJSON(t, jwks...))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// recordKeys answers every kid with no key, recording the jku URLs asked.
type recordKeys struct{ asked []string }

func (r *recordKeys) Lookup(_ context.Context, _, jku string) ([]signature.Key, error) {
	r.asked = append(r.asked, jku)
	return nil, nil
}

// FuzzJKUBudget: whatever jku URLs a card's signatures name, in whatever
// order, the keys behind one VerifyAt are asked about at most
// maxJKUsPerCard distinct ones, the first ones named, each as often as
// named; a refused one is still asked about without its jku (the trusted
// keys answer every kid) and fails with signature.ErrJKURefused.
func FuzzJKUBudget(f *testing.F) {
	f.Add("a\nb\nc")
	f.Add("a\na\na\nb\nb\nc\na")
	f.Add("\n\nx\n\ny\nz\nx")
	f.Fuzz(func(t *testing.T, list string) {
		inner := &recordKeys{}
		b := &jkuBudget{keys: inner}
		allowed := map[string]bool{}
		for _, jku := range strings.Split(list, "\n") {
			n := len(inner.asked)
			_, err := b.Lookup(context.Background(), "k", jku)
			if len(inner.asked) != n+1 {
				t.Fatalf("jku %q: the keys were asked %d times, want once", jku, len(inner.asked)-n)
			}
			got := inner.asked[n]
			switch {
			case jku == "" || allowed[jku] || len(allowed) < maxJKUsPerCard:
				if jku != "" {
					allowed[jku] = true
				}
				if got != jku || err != nil {
					t.Fatalf("jku %q within the budget: asked %q, err %v", jku, got, err)
				}
			default:
				if got != "" || !errors.Is(err, signature.ErrJKURefused) {
					t.Fatalf("jku %q past the budget: asked %q, err %v", jku, got, err)
				}
			}
		}
	})
}

func TestOrigin(t *testing.T) {
	for _, c := range []struct {
		name  string
		parse func(string) (string, error)
		ok    map[string]string
		bad   []string
		err   error
	}{
		{"Origin", Origin, map[string]string{
			"https://Agent.Example/.well-known/agent-card.json": "https://agent.example",
			"https://agent.example:443/a?b#c":                   "https://agent.example",
			"http://agent.example:80":                           "http://agent.example",
			"http://agent.example:8080/x":                       "http://agent.example:8080",
			"HTTP://[::1]:41241/":                               "http://[::1]:41241",
			"https://u:p@agent.example/":                        "https://agent.example",
		}, []string{"", "agent.example", "ftp://agent.example", "https://", "/relative"}, ReasonInvalidURL},
		{"ParseOrigin", ParseOrigin, map[string]string{
			"https://Agent.Example":      "https://agent.example",
			"https://agent.example:443/": "https://agent.example",
			"http://127.0.0.1:41241":     "http://127.0.0.1:41241",
			"http://[::1]:80":            "http://[::1]",
		}, []string{"", "agent.example", "https://agent.example/agent", "https://agent.example?x", "https://agent.example/#f",
			"https://agent.example#", "https://u@agent.example", "https://agent.example:", "ws://agent.example", "https://agent.example/?"}, ErrNotOrigin},
	} {
		for in, want := range c.ok {
			if got, err := c.parse(in); got != want || err != nil {
				t.Errorf("%s(%q) = %q, %v; want %q", c.name, in, got, err, want)
			}
		}
		for _, in := range c.bad {
			if got, err := c.parse(in); !errors.Is(err, c.err) {
				t.Errorf("%s(%q) = %q, %v; want %v", c.name, in, got, err, c.err)
			}
		}
	}
}

// TestVerifyScopedTrust: a key is trusted for the agents its operator says.
// A key scoped to an agent's origin verifies that agent's card as trusted
// and nobody else's; a key trusted for every agent verifies any; a key from
// the jku the signature names verifies but is recorded as the signer's
// claim; a kid a trusted set holds for the agent cannot be answered by a
// jku; and one body verified for two agents is two outcomes.
func TestVerifyScopedTrust(t *testing.T) {
	a, b, g := newTestSigner(t, "a"), newTestSigner(t, "b"), newTestSigner(t, "g")
	attacker := newTestSigner(t, "a") // claims kid "a" with its own key
	claims := newJWKSServer(t, jwksJSON(t, a.jwk(), b.jwk()), "max-age=600")
	forged := newJWKSServer(t, jwksJSON(t, attacker.jwk()), "max-age=600")
	bURL := newJWKSServer(t, jwksJSON(t, b.jwk()), "max-age=600")
	setOf := func(s testSigner) signature.Keys {
		set, err := signature.ParseJWKS(jwksJSON(t, s.jwk()))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	const agentA, agentB = "https://a.example", "http://127.0.0.1:8001"
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{
		JKU:     JKUAny,
		Trusted: setOf(g),
		Scoped: map[string]TrustedKeys{
			agentA: {Keys: setOf(a)},
			agentB: {URL: bURL.url()},
		},
	}
	f := newFetcher(t, o)
	card := cardJSON("1", true)
	byA, byB, byG := a.sign(t, card, claims.url()), b.sign(t, card, claims.url()), g.sign(t, card, "")
	byAttacker := attacker.sign(t, card, forged.url())
	for _, tc := range []struct {
		name, at       string
		raw            []byte
		source, reason string
		thumbprint     string
	}{
		{name: "a at its own origin", at: agentA + "/.well-known/agent-card.json", raw: byA, source: "trusted", reason: "verified", thumbprint: thumbprint(t, a)},
		{name: "a at another origin: its jku's claim", at: agentB + "/card.json", raw: byA, source: "jku", reason: "verified", thumbprint: thumbprint(t, a)},
		{name: "a read from a file: its jku's claim", at: "", raw: byA, source: "jku", reason: "verified", thumbprint: thumbprint(t, a)},
		{name: "b by URL at its origin", at: agentB + "/", raw: byB, source: "trusted", reason: "verified", thumbprint: thumbprint(t, b)},
		{name: "b at a's origin: a claim", at: agentA, raw: byB, source: "jku", reason: "verified", thumbprint: thumbprint(t, b)},
		{name: "g everywhere", at: agentA, raw: byG, source: "trusted", reason: "verified", thumbprint: thumbprint(t, g)},
		{name: "g from a file", at: "", raw: byG, source: "trusted", reason: "verified", thumbprint: thumbprint(t, g)},
		{name: "g at an origin without keys of its own", at: "https://c.example", raw: byG, source: "trusted", reason: "verified", thumbprint: thumbprint(t, g)},
		{name: "an attacker's key under a's kid at a's origin", at: agentA, raw: byAttacker, source: "trusted", reason: "invalid-signature", thumbprint: thumbprint(t, a)},
		{name: "an attacker's key under a's kid elsewhere: a claim", at: "https://c.example", raw: byAttacker, source: "jku", reason: "verified", thumbprint: thumbprint(t, attacker)},
		{name: "a at a's origin, spelt otherwise", at: "HTTPS://A.EXAMPLE:443/x", raw: byA, source: "trusted", reason: "verified", thumbprint: thumbprint(t, a)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := f.VerifyAt(context.Background(), tc.at, tc.raw)
			if len(sigs) != 1 {
				t.Fatalf("VerifyAt(%q) = %+v", tc.at, sigs)
			}
			if s := sigs[0]; s.Source != tc.source || s.Reason != tc.reason || s.Thumbprint != tc.thumbprint || s.Verified != (tc.reason == "verified") {
				t.Errorf("VerifyAt(%q) = %+v; want %s, source %q, key %s", tc.at, s, tc.reason, tc.source, tc.thumbprint)
			}
		})
	}
	if n := bURL.requests.Load(); n != 1 {
		t.Errorf("the scoped key set URL was fetched %d times, want once (max-age=600)", n)
	}
}

func TestSignatureOptionsScopedValidate(t *testing.T) {
	set := signature.NewKeySet()
	for _, scoped := range []map[string]TrustedKeys{
		{"https://Agent.example": {Keys: set}},        // not in normal form
		{"https://agent.example/path": {Keys: set}},   // not an origin
		{"https://agent.example": {}},                 // no keys
		{"https://agent.example": {URL: "ftp://x/j"}}, // not http
	} {
		opts := testOptions(nil)
		opts.Signatures = SignatureOptions{Scoped: scoped}
		if f, err := New(opts); err == nil {
			f.Close()
			t.Errorf("New(Scoped %v) = nil error", scoped)
		}
	}
	opts := testOptions(nil)
	opts.Signatures = SignatureOptions{Scoped: map[string]TrustedKeys{"https://agent.example": {Keys: set, URL: "https://agent.example/jwks.json"}}}
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New(a valid Scoped) = %v", err)
	}
	f.Close()
}

// jwksServer serves a key set with a Cache-Control, counting requests.
type jwksServer struct {
	srv      *httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	body     []byte
	cc       string
	gate     chan struct{} // when set, requests wait for it to close
}

func newJWKSServer(t testing.TB, body []byte, cacheControl string) *jwksServer {
	t.Helper()
	s := &jwksServer{body: body, cc: cacheControl}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		body, cc, gate := s.body, s.cc, s.gate
		s.mu.Unlock()
		if gate != nil {
			<-gate
		}
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) set(body []byte, cc string) {
	s.mu.Lock()
	s.body, s.cc = body, cc
	s.mu.Unlock()
}

// hold makes requests wait until the returned func is called.
func (s *jwksServer) hold() (release func()) { return holdGate(&s.mu, &s.gate) }

func (s *jwksServer) url() string { return s.srv.URL + "/.well-known/jwks.json" }

// testSigner is a P-256 key and its public JWKS.
type testSigner struct {
	key  *ecdsa.PrivateKey
	kid  string
	jwks []byte
}

func newTestSigner(t testing.TB, kid string) testSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{key: k, kid: kid, jwks: jwksJSON(t, jose.JSONWebKey{Key: k.Public(), KeyID: kid, Use: "sig"})}
}

func jwksJSON(t testing.TB, keys ...jose.JSONWebKey) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": append([]jose.JSONWebKey{}, keys...)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s testSigner) sign(t testing.TB, card []byte, jku string) []byte {
	t.Helper()
	out, err := signature.Sign(card, s.key, signature.SignOptions{KeyID: s.kid, JKU: jku})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newJWKS(t testing.TB, f *Fetcher, o JWKSOptions) *JWKS {
	t.Helper()
	o.AllowHTTP = true // httptest servers are http
	j, err := NewJWKS(f, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func kids(keys []signature.Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.JWK.KeyID)
	}
	return out
}

func TestJWKSLookup(t *testing.T) {
	a, b := newTestSigner(t, "a"), newTestSigner(t, "b")
	var both map[string][]json.RawMessage
	_ = json.Unmarshal(a.jwks, &both)
	var bk map[string][]json.RawMessage
	_ = json.Unmarshal(b.jwks, &bk)
	body, _ := json.Marshal(map[string]any{"keys": append(both["keys"], bk["keys"]...)})
	srv := newJWKSServer(t, body, "max-age=600")
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{})
	ctx := context.Background()

	keys, err := j.Lookup(ctx, "b", srv.url())
	if err != nil || len(keys) != 1 || keys[0].JWK.KeyID != "b" || keys[0].Thumbprint == "" {
		t.Fatalf("Lookup(b) = %v, %v", kids(keys), err)
	}
	if keys, err := j.Lookup(ctx, "a", srv.url()); err != nil || len(keys) != 1 {
		t.Fatalf("Lookup(a) = %v, %v", kids(keys), err)
	}
	// A kid the fresh set lacks: the set is younger than MinTTL, no refetch.
	if keys, err := j.Lookup(ctx, "c", srv.url()); err != nil || keys != nil {
		t.Fatalf("Lookup(c) = %v, %v", kids(keys), err)
	}
	if keys, err := j.Lookup(ctx, "a", ""); err != nil || keys != nil {
		t.Fatalf("Lookup without jku = %v, %v", kids(keys), err)
	}
	// Spellings of one URL share the entry.
	if _, err := j.Lookup(ctx, "a", strings.Replace(srv.url(), "http://", "HTTP://", 1)); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 1 || j.Len() != 1 {
		t.Errorf("%d requests, %d entries; want 1 and 1", n, j.Len())
	}
}

func TestJWKSHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"keys":[]}`))
	}))
	defer srv.Close()
	j := newJWKS(t, newFetcher(t, testOptions(nil)), JWKSOptions{})
	if _, err := j.Get(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if got.Get("Accept") != DefaultJWKSAccept || got.Get("User-Agent") != DefaultUserAgent || got.Get("A2A-Version") != "" {
		t.Errorf("request headers = %v", got)
	}
}

// TestJWKSCacheControl: a set is used for its max-age (minus Age), clamped to
// [MinTTL, MaxTTL], DefaultTTL without max-age.
func TestJWKSCacheControl(t *testing.T) {
	s := newTestSigner(t, "k")
	tests := []struct {
		name    string
		cc, age string
		ttl     time.Duration
	}{
		{"max-age", "max-age=600", "", 10 * time.Minute},
		{"max-age minus Age", "public, max-age=600", "100", 500 * time.Second},
		{"no-cache is MinTTL", "no-cache", "", DefaultJWKSMinTTL},
		{"max-age=0 is MinTTL", "max-age=0", "", DefaultJWKSMinTTL},
		{"below MinTTL", "max-age=5", "", DefaultJWKSMinTTL},
		{"above MaxTTL", "max-age=86400", "", DefaultJWKSMaxTTL},
		{"none", "", "", DefaultJWKSDefaultTTL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.cc != "" {
					w.Header().Set("Cache-Control", tc.cc)
				}
				if tc.age != "" {
					w.Header().Set("Age", tc.age)
				}
				_, _ = w.Write(s.jwks)
			}))
			defer srv.Close()
			clk := newClock()
			j := newJWKS(t, newFetcher(t, testOptions(clk)), JWKSOptions{})
			lookup := func() {
				t.Helper()
				if keys, err := j.Lookup(context.Background(), "k", srv.URL); err != nil || len(keys) != 1 {
					t.Fatalf("Lookup = %v, %v", kids(keys), err)
				}
			}
			lookup()
			clk.Advance(tc.ttl - time.Second)
			lookup()
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests within the TTL %v, want 1", n, tc.ttl)
			}
			clk.Advance(time.Second)
			lookup()
			if n := requests.Load(); n != 2 {
				t.Fatalf("%d requests once the TTL %v passed, want 2", n, tc.ttl)
			}
		})
	}
}

// TestJWKSRotation: a kid missing from a set older than MinTTL makes Lookup
// fetch the set again, so a new key is found before the set expires.
func TestJWKSRotation(t *testing.T) {
	old, next := newTestSigner(t, "2025"), newTestSigner(t, "2026")
	srv := newJWKSServer(t, old.jwks, "max-age=3600")
	clk := newClock()
	j := newJWKS(t, newFetcher(t, testOptions(clk)), JWKSOptions{})
	ctx := context.Background()
	if keys, _ := j.Lookup(ctx, "2025", srv.url()); len(keys) != 1 {
		t.Fatal("old key not found")
	}
	srv.set(next.jwks, "max-age=3600")
	if keys, err := j.Lookup(ctx, "2026", srv.url()); keys != nil || err != nil || srv.requests.Load() != 1 {
		t.Fatalf("Lookup(new kid) within MinTTL = %v, %v after %d requests; want no key, no refetch", kids(keys), err, srv.requests.Load())
	}
	clk.Advance(DefaultJWKSMinTTL)
	if keys, err := j.Lookup(ctx, "2026", srv.url()); len(keys) != 1 || err != nil || srv.requests.Load() != 2 {
		t.Fatalf("Lookup(new kid) after MinTTL = %v, %v after %d requests; want the new key", kids(keys), err, srv.requests.Load())
	}
	// The old kid is gone from the set now cached.
	if keys, _ := j.Lookup(ctx, "2025", srv.url()); keys != nil {
		t.Errorf("old key still found: %v", kids(keys))
	}
}

// TestJWKSFailure: a failure is remembered for FailureTTL, then retried.
func TestJWKSFailure(t *testing.T) {
	var requests atomic.Int64
	var ok atomic.Bool
	s := newTestSigner(t, "k")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !ok.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(s.jwks)
	}))
	defer srv.Close()
	clk := newClock()
	j := newJWKS(t, newFetcher(t, testOptions(clk)), JWKSOptions{FailureTTL: 10 * time.Second})
	for range 3 {
		_, err := j.Lookup(context.Background(), "k", srv.URL)
		if fe := fetchErr(t, err, ReasonStatus); fe.Status != http.StatusServiceUnavailable {
			t.Errorf("Status = %d", fe.Status)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests for 3 lookups within FailureTTL, want 1", n)
	}
	ok.Store(true)
	clk.Advance(10 * time.Second)
	if keys, err := j.Lookup(context.Background(), "k", srv.URL); len(keys) != 1 || err != nil {
		t.Errorf("Lookup after FailureTTL = %v, %v", kids(keys), err)
	}
}

// TestJWKSCoalesce: concurrent lookups of one URL share one fetch; a caller
// that leaves does not cancel the others.
func TestJWKSCoalesce(t *testing.T) {
	s := newTestSigner(t, "k")
	srv := newJWKSServer(t, s.jwks, "max-age=60")
	release := srv.hold()
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{})

	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			keys, err := j.Lookup(context.Background(), "k", srv.url())
			if err == nil && len(keys) != 1 {
				err = errors.New("no key")
			}
			errs <- err
		}()
	}
	// Wait for the flight (a generous bound: the goroutines may start late
	// on a busy machine, and without a flight the rest tests nothing).
	deadline := time.Now().Add(time.Minute)
	for srv.requests.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if srv.requests.Load() == 0 {
		t.Fatal("no lookup reached the JWKS server within a minute")
	}
	// A flight is in progress: this caller joins it, then leaves.
	leaver, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { _, err := j.Lookup(leaver, "k", srv.url()); left <- err }()
	time.Sleep(20 * time.Millisecond) // let everyone queue on the flight
	leave()
	if err := <-left; err == nil {
		t.Error("a caller whose context was canceled got keys")
	}
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := srv.requests.Load(); got != 1 {
		t.Errorf("%d requests for %d concurrent lookups, want 1", got, n+1)
	}
}

// TestJWKSCanceledLeader: when the caller whose lookup is fetching leaves, its
// fetch is not remembered as a failure; the next lookup fetches.
func TestJWKSCanceledLeader(t *testing.T) {
	s := newTestSigner(t, "k")
	srv := newJWKSServer(t, s.jwks, "max-age=60")
	release := srv.hold()
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := j.Lookup(ctx, "k", srv.url()); done <- err }()
	for srv.requests.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	fetchErr(t, <-done, ReasonCanceled)
	release()
	if keys, err := j.Lookup(context.Background(), "k", srv.url()); len(keys) != 1 || err != nil {
		t.Errorf("Lookup after a canceled fetch = %v, %v", kids(keys), err)
	}
}

func TestJWKSBounded(t *testing.T) {
	s := newTestSigner(t, "k")
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{MaxEntries: 2})
	for range 3 {
		srv := newJWKSServer(t, s.jwks, "max-age=600")
		if _, err := j.Lookup(context.Background(), "k", srv.url()); err != nil {
			t.Fatal(err)
		}
	}
	if j.Len() != 2 {
		t.Errorf("Len = %d, want 2", j.Len())
	}
}

// TestJWKSMaxBytes: the jku key sets cached are bounded in bytes (each
// counted at jwksEntrySize of its body), least recently used evicted first,
// one larger than the bound not kept; the operator's set (URL) is kept
// apart and survives any churn of jku URLs.
func TestJWKSMaxBytes(t *testing.T) {
	s := newTestSigner(t, "k")
	var set map[string]any
	if err := json.Unmarshal(s.jwks, &set); err != nil {
		t.Fatal(err)
	}
	set["pad"] = strings.Repeat("p", 100<<10) // a key set of about 100 KiB
	big, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	var requests sync.Map // path → *atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := requests.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		w.Write(big)
	}))
	t.Cleanup(srv.Close)
	const maxBytes = 1 << 20
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{MaxBytes: maxBytes})
	ctx := context.Background()
	operator := j.URL(srv.URL + "/operator.json")
	if keys, err := operator.Lookup(ctx, "k", ""); err != nil || len(keys) != 1 {
		t.Fatalf("operator Lookup = %v, %v", keys, err)
	}
	per := jwksEntrySize(len(big))
	for i := range 40 {
		if keys, err := j.Lookup(ctx, "k", fmt.Sprintf("%s/jku-%d.json", srv.URL, i)); err != nil || len(keys) != 1 {
			t.Fatalf("jku %d: Lookup = %v, %v", i, keys, err)
		}
		if b := j.Bytes(); b > maxBytes {
			t.Fatalf("after %d jku sets: %d bytes cached, bound %d", i+1, b, maxBytes)
		}
	}
	if got, want := j.Len(), int(maxBytes/per)+1; got != want {
		t.Errorf("Len = %d, want %d jku sets of %d bytes within %d, and the operator's", got, want, per, maxBytes)
	}
	if _, err := operator.Lookup(ctx, "k", ""); err != nil {
		t.Fatal(err)
	}
	if n, _ := requests.Load("/operator.json"); n.(*atomic.Int64).Load() != 1 {
		t.Errorf("the operator's key set was fetched %d times, want once: jku churn evicted it", n.(*atomic.Int64).Load())
	}
	if _, err := j.Lookup(ctx, "k", srv.URL+"/jku-0.json"); err != nil {
		t.Fatal(err)
	}
	if n, _ := requests.Load("/jku-0.json"); n.(*atomic.Int64).Load() != 2 {
		t.Errorf("the least recently used jku set was fetched %d times, want again after its eviction", n.(*atomic.Int64).Load())
	}
	tiny := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{MaxBytes: per - 1})
	if _, err := tiny.Lookup(ctx, "k", srv.URL+"/x.json"); err != nil || tiny.Len() != 0 || tiny.Bytes() != 0 {
		t.Errorf("a set larger than MaxBytes: %v, Len %d, Bytes %d; want used, not kept", err, tiny.Len(), tiny.Bytes())
	}
}

// TestJWKSPolicy: an http jku is refused before any request unless
// AllowHTTP; URL takes the operator's http set; bad options are refused.
func TestJWKSPolicy(t *testing.T) {
	s := newTestSigner(t, "k")
	srv := newJWKSServer(t, s.jwks, "")
	f := newFetcher(t, testOptions(nil))
	strict, err := NewJWKS(f, JWKSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = strict.Lookup(context.Background(), "k", srv.url())
	fetchErr(t, err, ReasonInvalidURL)
	for _, jku := range []string{"file:///etc/jwks.json", "ftp://x/jwks", "//host/jwks", "not a url"} {
		_, err := strict.Lookup(context.Background(), "k", jku)
		fetchErr(t, err, ReasonInvalidURL)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("%d requests for refused jku URLs", n)
	}
	if keys, err := strict.URL(srv.url()).Lookup(context.Background(), "k", "https://ignored.example/jwks"); len(keys) != 1 || err != nil {
		t.Errorf("URL(http).Lookup = %v, %v", kids(keys), err)
	}
	for _, o := range []JWKSOptions{{MinTTL: time.Hour, MaxTTL: time.Minute}, {MaxEntries: -1}, {MaxBodyBytes: 2 << 20}, {FailureTTL: -1}} {
		if _, err := NewJWKS(f, o); err == nil {
			t.Errorf("NewJWKS(%+v) accepted", o)
		}
	}
	if _, err := NewJWKS(nil, JWKSOptions{}); err == nil {
		t.Error("NewJWKS(nil) accepted")
	}
}

// TestHostileJWKS: key set endpoints that are slow, huge, not key sets or
// point at private addresses are contained like hostile cards: a typed
// *FetchError within the total timeout.
func TestHostileJWKS(t *testing.T) {
	deep := `{"keys":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		raw        func(c net.Conn)
		strict     bool // no loopback in Allow: the address itself is refused
		want       Reason
		wantStatus int
		wantErr    error
	}{
		{name: "slow headers", handler: hang, want: ReasonTimeout},
		{name: "slow body (trickle)", handler: func(w http.ResponseWriter, r *http.Request) {
			trickle(w, r, 20*time.Millisecond, []byte(`{"keys":[]}`))
		}, want: ReasonTimeout, wantStatus: 200},
		{name: "huge chunked body", handler: hugeChunked, want: ReasonTooLarge, wantStatus: 200},
		{name: "huge declared Content-Length", handler: hugeContentLength, want: ReasonTooLarge, wantStatus: 200},
		{name: "gzip bomb", handler: gzipBomb(), want: ReasonTooLarge, wantStatus: 200},
		{name: "Content-Length lies high, connection closes", raw: func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n{\"keys\":"))
		}, want: ReasonConnect, wantStatus: 200},
		{name: "not JSON", handler: serveBody(`<html>keys</html>`), want: ReasonInvalidJSON, wantStatus: 200},
		{name: "JSON, not a key set", handler: serveBody(`{"name":"an agent card"}`), want: ReasonNotACard, wantStatus: 200, wantErr: signature.ErrInvalidJWKS},
		{name: "JSON array", handler: serveBody(`[{"kty":"EC"}]`), want: ReasonNotACard, wantStatus: 200, wantErr: signature.ErrInvalidJWKS},
		{name: "duplicate keys", handler: serveBody(`{"keys":[],"keys":[]}`), want: ReasonDuplicateKeys, wantStatus: 200},
		{name: "deep nesting", handler: serveBody(deep), want: ReasonTooDeep, wantStatus: 200},
		{name: "invalid UTF-8", handler: serveBody("{\"keys\":[],\"x\":\"caf\xe9\"}"), want: ReasonInvalidUTF8, wantStatus: 200},
		{name: "404", handler: http.NotFound, want: ReasonStatus, wantStatus: 404},
		{name: "redirect loop", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		}, want: ReasonTooManyRedirects},
		{name: "redirect to cloud metadata", handler: redirectTo("http://169.254.169.254/latest/meta-data/", http.StatusFound), want: ReasonRefusedAddress},
		{name: "redirect to a private address", handler: redirectTo("http://10.0.0.1:8080/jwks.json", http.StatusTemporaryRedirect), want: ReasonRefusedAddress},
		{name: "redirect to file:", handler: redirectTo("file:///etc/passwd", http.StatusFound), want: ReasonRedirectRefused},
		{name: "private address", handler: serveBody(`{"keys":[]}`), strict: true, want: ReasonRefusedAddress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := serveHostile(t, tc.handler, tc.raw, "/jwks.json")
			o := hostileOptions()
			if tc.strict {
				o.Allow = nil
			}
			j := newJWKS(t, newFetcher(t, o), JWKSOptions{MaxBodyBytes: 64 << 10})
			start := time.Now()
			keys, err := j.Lookup(context.Background(), "k", url)
			elapsed := time.Since(start)
			fe := fetchErr(t, err, tc.want)
			if fe.Status != tc.wantStatus || keys != nil {
				t.Errorf("Status = %d (want %d), keys %v", fe.Status, tc.wantStatus, kids(keys))
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tc.wantErr)
			}
			if limit := o.TotalTimeout + slack; elapsed > limit {
				t.Errorf("took %v, want at most %v", elapsed, limit)
			}
			// Remembered: the next lookup fails the same way at once.
			start = time.Now()
			_, err = j.Lookup(context.Background(), "k", url)
			fetchErr(t, err, tc.want)
			if el := time.Since(start); el > 100*time.Millisecond {
				t.Errorf("second lookup took %v: the failure was not remembered", el)
			}
		})
	}
}

// TestJWKSVerify wires the cache into signature.Verify: a card whose jku
// names the key set verifies with the key marked as from jku; a key set that
// cannot be fetched leaves the signature unverified, never invalid; a key
// the operator trusts answers for its kid.
func TestJWKSVerify(t *testing.T) {
	s := newTestSigner(t, "agent-2026")
	srv := newJWKSServer(t, s.jwks, "max-age=300")
	card := []byte(`{"name":"Ledger Clerk","version":"1.4.0","skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}`)
	signed := s.sign(t, card, srv.url())
	f := newFetcher(t, testOptions(newClock()))
	j := newJWKS(t, f, JWKSOptions{})
	ctx := context.Background()

	verify := func(raw []byte, keys signature.Keys) signature.Result {
		t.Helper()
		res, err := signature.Verify(ctx, raw, keys)
		if err != nil || len(res) != 1 {
			t.Fatalf("Verify = %+v, %v", res, err)
		}
		return res[0]
	}
	if r := verify(signed, signature.Sources{JKU: j}); !r.Verified || r.Source != signature.SourceJKU || r.JKU != srv.url() {
		t.Errorf("Verify via jku = %+v", r)
	}
	tampered := bytes.Replace(signed, []byte(`"1.4.0"`), []byte(`"1.4.1"`), 1)
	if r := verify(tampered, signature.Sources{JKU: j}); r.Reason != signature.ReasonInvalidSignature {
		t.Errorf("Verify(tampered) = %+v", r)
	}

	down := newTestSigner(t, "agent-down")
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer dead.Close()
	if r := verify(down.sign(t, card, dead.URL+"/jwks.json"), signature.Sources{JKU: j}); r.Verified || r.Reason != signature.ReasonKeysUnavailable || !strings.Contains(r.Detail, "502") {
		t.Errorf("Verify with the key set down = %+v; want keys-unavailable", r)
	}

	other := newTestSigner(t, "agent-2026") // the same kid, another key, trusted
	trusted := signature.Sources{Trusted: j.URL(newJWKSServer(t, other.jwks, "").url()), JKU: j}
	if r := verify(signed, trusted); r.Verified || r.Source != signature.SourceTrusted || r.Reason != signature.ReasonInvalidSignature {
		t.Errorf("Verify with another trusted key for the kid = %+v; want invalid against the trusted key", r)
	}
}

// BenchmarkJWKSVerify verifies one ES256-signed card whose jku names an
// httptest key set: cold (a new cache: the key set fetch is included) and
// with the key set cached.
func BenchmarkJWKSVerify(b *testing.B) {
	s := newTestSigner(b, "bench")
	srv := newJWKSServer(b, s.jwks, "max-age=3600")
	card := []byte(`{"name":"Ledger Clerk","description":"Reads invoices.","version":"1.4.0","capabilities":{"streaming":true},
		"supportedInterfaces":[{"url":"https://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
		"skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}`)
	signed := s.sign(b, card, srv.url())
	f, err := New(Options{Allow: loopback})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	ctx := context.Background()
	run := func(b *testing.B, keys func() signature.Keys) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := signature.Verify(ctx, signed, keys())
			if err != nil || !res[0].Verified {
				b.Fatalf("Verify = %+v, %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/verify")
	}
	b.Run("cold", func(b *testing.B) {
		before := srv.requests.Load()
		run(b, func() signature.Keys {
			j, _ := NewJWKS(f, JWKSOptions{AllowHTTP: true})
			return signature.Sources{JKU: j}
		})
		b.ReportMetric(float64(srv.requests.Load()-before)/float64(b.N), "fetches/verify")
	})
	b.Run("cached", func(b *testing.B) {
		j, _ := NewJWKS(f, JWKSOptions{AllowHTTP: true})
		keys := signature.Sources{JKU: j}
		before := srv.requests.Load()
		run(b, func() signature.Keys { return keys })
		b.ReportMetric(float64(srv.requests.Load()-before)/float64(b.N), "fetches/verify")
	})
}
