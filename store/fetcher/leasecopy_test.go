package fetcher

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
)

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
