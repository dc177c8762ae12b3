package fetcher

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/carddrift/carddrift/store"
)

// LeaseFollower is implemented by shared lease stores whose every write can
// be followed with its value (store.KVLeases). A Fetcher whose
// Options.Leases is one keeps a local copy of the leases (see
// Options.LeaseCopyBytes).
type LeaseFollower interface {
	// Follow starts a feed of the current leases, then of every write;
	// a write known reports held (this Fetcher's own) need not be decoded.
	Follow(ctx context.Context, known func(key string, rev uint64) bool) (store.LeaseFeed, error)
	// Head returns the store's last revision: a feed that reported it has
	// reported every write committed before Head was called.
	Head(ctx context.Context) (uint64, error)
}

// Bounds of the copy's watch.
const (
	// copyEntryOverhead is what a copied lease costs beside its strings
	// (the entry, its list element and map slot, the Lease's fixed fields).
	copyEntryOverhead = 384
	// copyRetryMin and copyRetryMax bound the wait before a broken watch is
	// started again.
	copyRetryMin = 100 * time.Millisecond
	copyRetryMax = 10 * time.Second
	// copyStuckAfter is how many lags a watch may trail the bucket's head
	// before it is taken for broken and started again.
	copyStuckAfter = 25
	// maxPendingProbes bounds the heads waiting for the watch to reach them.
	maxPendingProbes = 8
)

// leaseCopy is a Fetcher's local copy of the shared leases, kept current by
// a watch of the store (LeaseFollower). It answers a read only while it is
// trusted: the watch has delivered the store's current values and, within
// lag, has reached a head read from the store (so the copy holds every write
// committed up to lag ago). Entries are the latest revision seen of a key,
// from the watch, from a store read or from this Fetcher's own writes; a
// lower revision never replaces a higher one, and a removal is kept as a
// tombstone of its revision. The watch delivers this Fetcher's own writes
// too (one subject per card URL: a watch cannot leave them out), often
// before the write's own reply: the copy knows them from the write
// (writing, wrote), so the watch's copy of them is not decoded (holds). A key the copy does not hold (never seen,
// evicted, removed) is a miss: the caller reads the store. The copy never
// answers "not found".
//
// Its goroutine (run) is owned by the Fetcher: started with the first
// flight, counted in Fetcher.wg, it exits when the Fetcher's base context
// ends (Close).
type leaseCopy struct {
	src      LeaseFollower
	maxBytes int64
	lag      time.Duration
	timeout  time.Duration // each Head call

	mu      sync.Mutex
	entries *lru[string, copyEntry] // front: most recently read or written
	applied uint64                  // highest revision the running watch delivered
	current bool                    // the running watch delivered the store's current values
	// confirmed is when the latest head the watch has reached was read:
	// every write committed before it is in the copy.
	confirmed time.Time
	pending   []probe // heads read, not yet reached, oldest first
	// own are this Fetcher's lease writes in flight, by key.
	own map[string]*ownWrite
}

// ownWrite is a compare-and-set of this Fetcher's in flight on one key:
// on the revision base (0: a create). The key's first write after base
// that the watch delivers meanwhile is this one if the write succeeds
// (a compare-and-set admits no write between), so it is not decoded;
// should the write fail, the key is dropped instead.
type ownWrite struct {
	base    uint64
	n       int  // writes in flight on the key (more than one: none is skipped)
	skipped bool // the watch delivered the write after base, not decoded
}

// copyEntry is one key of the copy.
type copyEntry struct {
	key     string
	lease   store.Lease
	rev     uint64
	removed bool // a tombstone: rev deleted the key
	size    int64
}

// probe is a head read from the store and when the read began.
type probe struct {
	head uint64
	at   time.Time
}

func newLeaseCopy(src LeaseFollower, maxBytes int64, lag, timeout time.Duration) *leaseCopy {
	return &leaseCopy{src: src, maxBytes: maxBytes, lag: lag, timeout: timeout,
		entries: newLRU[string, copyEntry](math.MaxInt, maxBytes), own: make(map[string]*ownWrite)}
}

// get returns the copied lease of key and its revision, false when the copy
// is not trusted or does not hold the key.
func (c *leaseCopy) get(key string) (store.Lease, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.trusted(time.Now()) {
		return store.Lease{}, 0, false
	}
	e, ok := c.entries.get(key)
	if !ok || e.removed {
		return store.Lease{}, 0, false
	}
	return e.lease, e.rev, true
}

// trusted reports whether the copy may answer at now. Called with c.mu held.
func (c *leaseCopy) trusted(now time.Time) bool {
	return c.current && !c.confirmed.IsZero() && now.Sub(c.confirmed) < c.lag
}

// put records l at rev under key unless the copy holds a later revision.
func (c *leaseCopy) put(key string, l store.Lease, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(copyEntry{key: key, lease: l, rev: rev, size: leaseSize(key, l)})
}

// holds reports whether the watch's write of key at rev need not be
// decoded: the copy holds it or a later revision, or it is this Fetcher's
// write in flight (ownWrite).
func (c *leaseCopy) holds(key string, rev uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.own[key]; w != nil && w.n == 1 && !w.skipped && rev > w.base {
		w.skipped = true
		return true
	}
	e, ok := c.entries.peek(key)
	return ok && e.rev >= rev
}

// writing records a compare-and-set of key on rev about to be made.
func (c *leaseCopy) writing(key string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.own[key]; w != nil {
		w.n++
		return
	}
	c.own[key] = &ownWrite{base: rev, n: 1}
}

// wrote records the outcome of a compare-and-set of key on rev begun with
// writing: l at next when err is nil, else the key (or, for a lost race
// the watch's copy was not skipped for, its revisions up to rev) is
// dropped.
func (c *leaseCopy) wrote(key string, rev uint64, l store.Lease, next uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.own[key]
	skipped := w != nil && w.skipped
	if w != nil {
		if w.n--; w.n == 0 {
			delete(c.own, key)
		}
	}
	e, held := c.entries.peek(key)
	switch {
	case err == nil:
		c.set(copyEntry{key: key, lease: l, rev: next, size: leaseSize(key, l)})
	case held && (skipped || !isConflict(err) || e.rev <= rev):
		// Another's write may have been skipped, or the outcome is unknown.
		c.entries.remove(key)
	}
}

// set installs e unless the copy holds a later revision of its key (the
// least recently used entries over the bound are evicted). Called with c.mu
// held.
func (c *leaseCopy) set(e copyEntry) {
	if old, ok := c.entries.peek(e.key); !ok || old.rev < e.rev {
		c.entries.put(e.key, e, e.size)
	}
}

// reset empties the copy and forgets the watch's progress: a new watch
// starts from the store's current values. Called with c.mu held.
func (c *leaseCopy) reset() {
	c.entries = newLRU[string, copyEntry](math.MaxInt, c.maxBytes)
	c.applied, c.current = 0, false
	c.confirmed, c.pending = time.Time{}, c.pending[:0]
}

// apply records one update of the running watch.
func (c *leaseCopy) apply(u store.LeaseUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case u.Current:
		c.current = true
	case u.Deleted:
		c.set(copyEntry{key: u.Key, rev: u.Rev, removed: true, size: copyEntryOverhead + int64(len(u.Key))})
	case u.Known:
		// Held already (holds).
	case u.Corrupt:
		// Reads of it go to the store, which reports it.
		if e, ok := c.entries.peek(u.Key); ok && e.rev < u.Rev {
			c.entries.remove(u.Key)
		}
	default:
		c.set(copyEntry{key: u.Key, lease: u.Lease, rev: u.Rev, size: leaseSize(u.Key, u.Lease)})
	}
	c.applied = max(c.applied, u.Rev)
	c.reach()
}

// observeHead records a head read from the store at at.
func (c *leaseCopy) observeHead(head uint64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == maxPendingProbes {
		// Keep the oldest (it confirms first) and the newest.
		c.pending = append(c.pending[:1], c.pending[2:]...)
	}
	c.pending = append(c.pending, probe{head: head, at: at})
	c.reach()
}

// reach confirms the heads the watch has reached. Called with c.mu held.
func (c *leaseCopy) reach() {
	n := 0
	for _, p := range c.pending {
		if p.head > c.applied {
			break
		}
		if p.at.After(c.confirmed) {
			c.confirmed = p.at
		}
		n++
	}
	c.pending = append(c.pending[:0], c.pending[n:]...)
}

// stuck reports a watch that has trailed a head for copyStuckAfter lags.
func (c *leaseCopy) stuck(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0 && now.Sub(c.pending[0].at) > copyStuckAfter*c.lag
}

// run keeps the copy current until ctx ends: it starts a watch, applies its
// updates and checks its progress against the store's head, and when the
// watch breaks (its connection closed, the server restarted, it stopped
// reaching the head) empties the copy — reads go to the store — and starts
// another after a backoff.
func (c *leaseCopy) run(ctx context.Context) {
	backoff := copyRetryMin
	for ctx.Err() == nil {
		if c.follow(ctx) {
			backoff = copyRetryMin
		}
		if sleepCtx(ctx, jitter(backoff)) != nil {
			return
		}
		backoff = min(2*backoff, copyRetryMax)
	}
}

// follow runs one watch until it breaks or ctx ends, and reports whether it
// had caught up with the store.
func (c *leaseCopy) follow(ctx context.Context) (caughtUp bool) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	c.reset()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		caughtUp = c.current && !c.confirmed.IsZero()
		c.reset()
		c.mu.Unlock()
	}()
	feed, err := c.src.Follow(wctx, c.holds)
	if err != nil {
		return
	}
	defer func() { _ = feed.Stop() }()

	var wg sync.WaitGroup
	wg.Go(func() { c.probe(wctx, cancel) })
	defer wg.Wait()
	for {
		u, err := feed.Next(wctx)
		if err != nil {
			cancel()
			return
		}
		c.apply(u)
	}
}

// probe reads the store's head every lag/4 until ctx ends, and cancels the
// watch (stop) when it is stuck.
func (c *leaseCopy) probe(ctx context.Context, stop context.CancelFunc) {
	t := time.NewTicker(max(c.lag/4, time.Millisecond))
	defer t.Stop()
	for {
		at := time.Now()
		hctx, cancel := context.WithTimeout(ctx, c.timeout)
		head, err := c.src.Head(hctx)
		cancel()
		if err == nil {
			c.observeHead(head, at)
		}
		if c.stuck(time.Now()) {
			stop()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leaseSize is what the copy charges for l under key.
func leaseSize(key string, l store.Lease) int64 {
	n := copyEntryOverhead + len(key) + len(l.CardURL) + len(l.Digest) + len(l.ETag) +
		len(l.FailReason) + len(l.FailDetail) + len(l.Replicas.Last) + 24*len(l.Replicas.Returns)
	for _, s := range l.Replicas.Seen {
		n += 64 + len(s.Digest)
	}
	return int64(n)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// jitter returns d ± 25%.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}
