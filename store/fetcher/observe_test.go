package fetcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
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
