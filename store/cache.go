package store

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCacheSize is the number of pins NewCachedPins keeps when given a
// size below 1.
const DefaultCacheSize = 1 << 16

// cacheStripes is how many fences guard in-flight reads and writes; a
// result that overlaps a newer write to any key of its stripe is not cached.
const cacheStripes = 1024

// CacheOption configures NewCachedPins.
type CacheOption func(*cacheOptions)

type cacheOptions struct {
	maxAge   time.Duration
	now      func() time.Time
	maxBytes int64
	sizeOf   any // func(T) int64 of the cache's T
	detach   any // func(T) T of the cache's T
}

// WithCacheDetach makes the cache keep detach(pin) of the pins it is
// written (Create, Update) instead of a Clone: a copy that shares no memory
// at all with the caller's, strings included. Pins read from the inner
// store are fresh already. Use it when a pin's strings may be slices of a
// much larger buffer (a parsed card's), which a cached pin would otherwise
// keep alive beyond what WithCacheBytes counts; a JSON round trip is such a
// copy. NewCachedPins panics if T is not the cache's record type.
func WithCacheDetach[T any](detach func(T) T) CacheOption {
	return func(o *cacheOptions) { o.detach = detach }
}

// CacheEntryOverhead is what WithCacheBytes adds to the size of every cached
// pin for the entry that holds it: the entry (its links, revision and time),
// its map slot and the id's header; the id's bytes are counted on top.
const CacheEntryOverhead = 160

// WithCacheBytes bounds the cache by the bytes its entries retain as well
// as by count: an entry counts size(pin) + len(id) + CacheEntryOverhead,
// and the least recently used entries are evicted until the total is at
// most maxBytes. A pin whose entry alone exceeds maxBytes is not cached
// (it is read through). size estimates what a pin keeps alive (its struct
// and the strings, slices and maps it reaches); it is called once per
// pin cached, outside the cache's lock. maxBytes <= 0 or a nil size: no byte
// bound. NewCachedPins panics if T is not the cache's record type.
func WithCacheBytes[T any](maxBytes int64, size func(T) int64) CacheOption {
	return func(o *cacheOptions) { o.maxBytes, o.sizeOf = maxBytes, size }
}

// WithCacheMaxAge makes a cached pin older than d (since it was cached) a
// miss: a hard bound on how long a write by another process, or an expiry
// by the bucket's TTL, can go unseen. Zero (default): no bound.
func WithCacheMaxAge(d time.Duration) CacheOption {
	return func(o *cacheOptions) { o.maxAge = d }
}

// CachedPins is a bounded (by count and, with WithCacheBytes, by bytes)
// in-process read-through LRU cache in front of a Pins store. It implements
// Pins; reads of cached pins cost no I/O. It does not watch the store: it
// knows only what this process reads and writes through it.
//
// Consistency:
//
//   - A Get never returns a pin older than this process's last completed
//     write of that task (Create, Update or Delete through this CachedPins[T]):
//     writes go through to the inner store and then replace or drop the
//     cached copy, and a read racing with a newer write is not cached.
//   - Writes by other processes are not seen until the entry leaves the
//     cache: call Forget when another process may have written (the worker
//     does when a partition's pinning changes, so one process at a time
//     writes a task's pin), and WithCacheMaxAge bounds how long a missed
//     write, or an expiry by the bucket's TTL, is served stale. A stale
//     revision cannot be written: Update at it fails with ErrConflict and
//     drops the entry.
//   - Ids longer than MaxReversibleID are never cached.
//   - With a replicated bucket, the write-through entry hides a lagging
//     follower (see KVPins) from this process's own writes while it stays
//     cached; a miss may read one like any KVPins.Get.
//
// Safe for concurrent use. The zero value is not usable.
type CachedPins[T Record[T]] struct {
	inner  Pins[T]
	size   int
	maxAge time.Duration
	now    func() time.Time
	seed   maphash.Seed
	// maxBytes and sizeOf: WithCacheBytes (0, nil: no byte bound).
	maxBytes int64
	sizeOf   func(T) int64
	detach   func(T) T // WithCacheDetach (nil: Clone)

	mu      sync.Mutex
	bytes   int64  // sum of the entries' sizes
	session uint64 // Forgets so far: a read or write across one is not cached
	stripes [cacheStripes]fence
	items   map[string]*cacheEntry[T]
	lru     cacheEntry[T] // sentinel: lru.next is the most recently used

	hits, misses, fills, invalidations, evictions atomic.Uint64
}

type cacheEntry[T any] struct {
	id         string
	pin        T
	rev        uint64
	at         time.Time // when cached; only with maxAge
	size       int64     // retained bytes; only with WithCacheBytes
	prev, next *cacheEntry[T]
}

// fence guards the in-flight reads and writes of one stripe. Every own
// write raises it: epoch counts them all, drops those whose revision is
// unknown (deletes, failed writes), and maxRev is the highest revision of
// the others (write-throughs).
//
// A result at revision rev observed under a token may be cached if no drop
// happened since and every other write since was at a revision <= rev: such
// a write happened before the read (or is the very write that returned
// rev), so the result already reflects it, whichever key of the stripe it
// was for; a later one (revision > rev) refuses any fill that raced it.
type fence struct {
	epoch, drops, maxRev uint64
}

// cacheToken is what a read or write saw before going to the inner store;
// its result may be cached only if no Forget happened since and the
// stripe's fence allows it (see fence).
type cacheToken struct {
	session, epoch, drops uint64
}

// NewCachedPins returns a cache of up to size pins in front of inner,
// caching at once. Size below 1 means DefaultCacheSize.
func NewCachedPins[T Record[T]](inner Pins[T], size int, opts ...CacheOption) *CachedPins[T] {
	if size < 1 {
		size = DefaultCacheSize
	}
	o := cacheOptions{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	c := &CachedPins[T]{
		inner:  inner,
		size:   size,
		maxAge: o.maxAge,
		now:    o.now,
		seed:   maphash.MakeSeed(),
		items:  make(map[string]*cacheEntry[T]),
		detach: option[func(T) T](o.detach, "WithCacheDetach detach"),
	}
	if o.maxBytes > 0 {
		c.maxBytes, c.sizeOf = o.maxBytes, option[func(T) int64](o.sizeOf, "WithCacheBytes size")
	}
	if c.sizeOf == nil {
		c.maxBytes = 0
	}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// option returns the func an option holds for the cache's T (nil for
// none), panicking when it is one of another type.
func option[F any](v any, what string) F {
	f, ok := v.(F)
	if v != nil && !ok {
		panic(fmt.Sprintf("store: %s is a %T, want a %T", what, v, f))
	}
	return f
}

// Forget drops every cached pin and fences every read and write in flight,
// so that none started before Forget is cached: from then on the cache
// holds only what is read or written after it. Call it when other
// processes may have written pins since they were cached.
func (c *CachedPins[T]) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session++
	c.invalidations.Add(uint64(len(c.items)))
	clear(c.items)
	c.bytes = 0
	c.lru.next, c.lru.prev = &c.lru, &c.lru
}

func (c *CachedPins[T]) stripe(id string) uint64 {
	return maphash.String(c.seed, id) % cacheStripes
}

// token captures the state a later store must match. c.mu held.
func (c *CachedPins[T]) token(id string) cacheToken {
	f := c.stripes[c.stripe(id)]
	return cacheToken{session: c.session, epoch: f.epoch, drops: f.drops}
}

// valid reports whether a result at rev for id, observed under tok, may be
// cached. c.mu held.
func (c *CachedPins[T]) valid(id string, tok cacheToken, rev uint64) bool {
	if tok.session != c.session {
		return false
	}
	f := &c.stripes[c.stripe(id)]
	return f.drops == tok.drops && (f.epoch == tok.epoch || f.maxRev <= rev)
}

// store records that the inner store held pin at rev, observed under tok.
// Whatever happens, no entry older than rev survives: either the pin is
// cached (tok still valid) or an older entry is dropped. An own write
// (written) also fences the reads in flight that may have seen an older
// revision, so that none of them can cache it, even once the new entry has
// been evicted.
func (c *CachedPins[T]) store(id string, tok cacheToken, pin T, rev uint64, written bool) {
	if written && c.detach != nil {
		pin = c.detach(pin)
	}
	var size int64
	if c.sizeOf != nil {
		size = c.sizeOf(pin) + int64(len(id)) + CacheEntryOverhead
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	valid := c.valid(id, tok, rev)
	if written { // fence the reads in flight that saw an older revision
		f := &c.stripes[c.stripe(id)]
		f.epoch++
		f.maxRev = max(f.maxRev, rev)
	}
	e := c.items[id]
	if e != nil && e.rev > rev {
		return
	}
	switch {
	case e != nil && e.rev == rev:
		if valid && c.maxAge > 0 {
			e.at = c.now() // re-read after WithCacheMaxAge: still current
		}
		return
	case !valid || (c.maxBytes > 0 && size > c.maxBytes):
		if e != nil {
			c.unlink(e)
		}
		return
	case e == nil:
		e = &cacheEntry[T]{id: id}
		c.items[id] = e
		if len(c.items) > c.size {
			c.unlink(c.lru.prev)
			c.evictions.Add(1)
		}
	default:
		e.prev.next, e.next.prev = e.next, e.prev
		c.bytes -= e.size
	}
	e.pin, e.rev, e.size = pin.Clone(), rev, size
	c.bytes += size
	if c.maxAge > 0 {
		e.at = c.now()
	}
	// Evict by bytes, least recently used first; e is not linked yet, so
	// it stays (its size is at most maxBytes).
	for c.maxBytes > 0 && c.bytes > c.maxBytes && c.lru.prev != &c.lru {
		c.unlink(c.lru.prev)
		c.evictions.Add(1)
	}
	c.pushFront(e)
	c.fills.Add(1)
}

// drop removes id's entry and fences all in-flight reads and writes of its
// stripe, whatever revision they saw (the write's revision is unknown).
func (c *CachedPins[T]) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &c.stripes[c.stripe(id)]
	f.epoch++
	f.drops++
	if e := c.items[id]; e != nil {
		c.unlink(e)
	}
}

func (c *CachedPins[T]) pushFront(e *cacheEntry[T]) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *CachedPins[T]) unlink(e *cacheEntry[T]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	c.bytes -= e.size
	delete(c.items, e.id)
}

// Get implements Pins, from the cache when it can.
func (c *CachedPins[T]) Get(ctx context.Context, taskID string) (T, uint64, error) {
	if len(taskID) > MaxReversibleID {
		return c.inner.Get(ctx, taskID)
	}
	c.mu.Lock()
	if e := c.items[taskID]; e != nil && (c.maxAge <= 0 || c.now().Sub(e.at) < c.maxAge) {
		if c.lru.next != e {
			e.prev.next, e.next.prev = e.next, e.prev
			c.pushFront(e)
		}
		pin, rev := e.pin.Clone(), e.rev
		c.mu.Unlock()
		c.hits.Add(1)
		return pin, rev, nil
	}
	tok := c.token(taskID)
	c.mu.Unlock()
	c.misses.Add(1)
	pin, rev, err := c.inner.Get(ctx, taskID)
	if err == nil {
		c.store(taskID, tok, pin, rev, false)
	}
	return pin, rev, err
}

// Create and Update implement Pins, caching the new pin.
func (c *CachedPins[T]) Create(ctx context.Context, pin T) (uint64, error) {
	return c.write(pin, func() (uint64, error) { return c.inner.Create(ctx, pin) })
}

func (c *CachedPins[T]) Update(ctx context.Context, pin T, rev uint64) (uint64, error) {
	return c.write(pin, func() (uint64, error) { return c.inner.Update(ctx, pin, rev) })
}

// write makes an own write of pin to the inner store (do) and writes it
// through to the cache, or drops the entry when it fails.
func (c *CachedPins[T]) write(pin T, do func() (uint64, error)) (uint64, error) {
	id := pin.Key()
	if len(id) > MaxReversibleID {
		return do()
	}
	c.mu.Lock()
	tok := c.token(id)
	c.mu.Unlock()
	rev, err := do()
	if err != nil {
		c.drop(id)
		return rev, err
	}
	c.store(id, tok, pin, rev, true)
	return rev, nil
}

// Delete implements Pins.
func (c *CachedPins[T]) Delete(ctx context.Context, taskID string) error {
	c.drop(taskID)
	err := c.inner.Delete(ctx, taskID)
	c.drop(taskID)
	return err
}

// CacheStats counts what a CachedPins[T] did since it was made.
type CacheStats struct {
	Hits          uint64 // Gets served from the cache
	Misses        uint64 // Gets that read through
	Fills         uint64 // pins cached (by reads and own writes)
	Invalidations uint64 // entries dropped by Forget
	Evictions     uint64 // entries dropped for the count or byte bound
	Len           int    // pins cached now
	Bytes         int64  // their retained bytes (WithCacheBytes; 0 without)
}

// Stats returns the counters (for metrics and tests).
func (c *CachedPins[T]) Stats() CacheStats {
	c.mu.Lock()
	n, b := len(c.items), c.bytes
	c.mu.Unlock()
	return CacheStats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Fills: c.fills.Load(),
		Invalidations: c.invalidations.Load(), Evictions: c.evictions.Load(),
		Len: n, Bytes: b,
	}
}
