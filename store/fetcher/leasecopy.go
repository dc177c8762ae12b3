package fetcher

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/carddrift/carddrift/store"
)

// LeaseFollower is implemented by shared lease stores whose every write can
// be followed with its value (store.KVLeases). A Fetcher whose
// Options.Leases is one keeps a local copy of the leases (see
// Options.LeaseCopyBytes).
type LeaseFollower interface {
	// Follow starts a feed of the current leases, then of every write.
	Follow(ctx context.Context) (store.LeaseFeed, error)
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
// tombstone of its revision. A key the copy does not hold (never seen,
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
	m       map[string]*list.Element // key → *copyEntry
	lru     list.List                // front: most recently read or written
	bytes   int64
	applied uint64 // highest revision the running watch delivered
	current bool   // the running watch delivered the store's current values
	// confirmed is when the latest head the watch has reached was read:
	// every write committed before it is in the copy.
	confirmed time.Time
	pending   []probe // heads read, not yet reached, oldest first
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
	return &leaseCopy{src: src, maxBytes: maxBytes, lag: lag, timeout: timeout, m: make(map[string]*list.Element)}
}

// get returns the copied lease of key and its revision, false when the copy
// is not trusted or does not hold the key.
func (c *leaseCopy) get(key string) (store.Lease, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.trusted(time.Now()) {
		return store.Lease{}, 0, false
	}
	el, ok := c.m[key]
	if !ok || el.Value.(*copyEntry).removed {
		return store.Lease{}, 0, false
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*copyEntry)
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
	c.set(&copyEntry{key: key, lease: l, rev: rev, size: leaseSize(key, l)})
}

// remove records that rev removed key.
func (c *leaseCopy) remove(key string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(&copyEntry{key: key, rev: rev, removed: true, size: copyEntryOverhead + int64(len(key))})
}

// forget drops key (a compare-and-set on its copied revision failed): the
// next read of it goes to the store.
func (c *leaseCopy) forget(key string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok && el.Value.(*copyEntry).rev <= rev {
		c.drop(el)
	}
}

// set installs e unless the copy holds a later revision of its key, then
// evicts the least recently used entries over the bound. Called with c.mu
// held.
func (c *leaseCopy) set(e *copyEntry) {
	if el, ok := c.m[e.key]; ok {
		if el.Value.(*copyEntry).rev >= e.rev {
			return
		}
		c.drop(el)
	}
	if e.size > c.maxBytes {
		return
	}
	c.m[e.key] = c.lru.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.maxBytes {
		c.drop(c.lru.Back())
	}
}

// drop removes el. Called with c.mu held.
func (c *leaseCopy) drop(el *list.Element) {
	e := el.Value.(*copyEntry)
	c.lru.Remove(el)
	delete(c.m, e.key)
	c.bytes -= e.size
}

// reset empties the copy and forgets the watch's progress: a new watch
// starts from the store's current values. Called with c.mu held.
func (c *leaseCopy) reset() {
	clear(c.m)
	c.lru.Init()
	c.bytes, c.applied, c.current = 0, 0, false
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
		c.set(&copyEntry{key: u.Key, rev: u.Rev, removed: true, size: copyEntryOverhead + int64(len(u.Key))})
	case u.Corrupt:
		// Reads of it go to the store, which reports it.
		if el, ok := c.m[u.Key]; ok && el.Value.(*copyEntry).rev < u.Rev {
			c.drop(el)
		}
	default:
		c.set(&copyEntry{key: u.Key, lease: u.Lease, rev: u.Rev, size: leaseSize(u.Key, u.Lease)})
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
	feed, err := c.src.Follow(wctx)
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
	n := copyEntryOverhead + len(key) + len(l.CardURL) + len(l.Digest) + len(l.ETag) + len(l.Holder) +
		len(l.FailReason) + len(l.FailDetail) + len(l.Replicas.Last) + 24*len(l.Replicas.Returns)
	for _, s := range l.Replicas.Seen {
		n += 64 + len(s.Digest)
	}
	return int64(n)
}
