package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

func TestCachedPinsConformance(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		pinsSuite(t, func(t *testing.T) store.Pins[testRecord] {
			c := store.NewCachedPins(memstore.NewPins[testRecord](), 100)
			return c
		})
	})
	t.Run("kv", func(t *testing.T) {
		withJS(t, func(js jetstream.JetStream) {
			pinsSuite(t, func(t *testing.T) store.Pins[testRecord] {
				c := store.NewCachedPins(store.NewKVPins[testRecord](newKV(t, js, "pins", jetstream.KeyValueConfig{})), 100)
				return c
			})
		})
	})
}

// countingPins counts the Gets that reach the inner store and can make
// them slow, to widen the window between a read and its cache fill.
type countingPins struct {
	*memstore.Pins[testRecord]
	gets     atomic.Int64
	maxDelay time.Duration
}

func (p *countingPins) Get(ctx context.Context, id string) (testRecord, uint64, error) {
	p.gets.Add(1)
	pin, rev, err := p.Pins.Get(ctx, id)
	if p.maxDelay > 0 {
		time.Sleep(rand.N(p.maxDelay))
	}
	return pin, rev, err
}

func TestCachedPinsHits(t *testing.T) {
	inner := &countingPins{Pins: memstore.NewPins[testRecord]()}
	c := store.NewCachedPins(inner, 10)
	ctx := t.Context()
	if _, err := inner.Pins.Create(ctx, testPin("t1", 1)); err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	for range 5 {
		if _, _, err := c.Get(ctx, "t1"); err != nil {
			t.Fatalf("Get() error = %v", err)
		}
	}
	if got := inner.gets.Load(); got != 1 {
		t.Fatalf("inner Gets after 5 reads = %d, want 1 (one fill)", got)
	}
	st := c.Stats()
	if st.Hits != 4 || st.Misses != 1 || st.Fills != 1 || st.Len != 1 {
		t.Fatalf("Stats() = %+v, want 4 hits, 1 miss, 1 fill, 1 cached", st)
	}
	// Own writes are written through: the next read is a hit with the new pin.
	_, rev, _ := c.Get(ctx, "t1")
	nrev, err := c.Update(ctx, testPin("t1", 2), rev)
	if err != nil {
		t.Fatalf("Update() error = %v", err)
	}
	_, grev, err := c.Get(ctx, "t1")
	if err != nil || grev != nrev {
		t.Fatalf("Get() after Update = rev %d, %v; want %d, nil", grev, err, nrev)
	}
	if got := inner.gets.Load(); got != 1 {
		t.Fatalf("inner Gets after own Update = %d, want 1 (written through)", got)
	}
}

func TestCachedPinsEvictsLRU(t *testing.T) {
	inner := &countingPins{Pins: memstore.NewPins[testRecord]()}
	c := store.NewCachedPins(inner, 3)
	ctx := t.Context()
	ids := []string{"a", "b", "c", "d", "e"}
	for i, id := range ids {
		if _, err := c.Create(ctx, testPin(id, i)); err != nil {
			t.Fatalf("Create(%s) error = %v", id, err)
		}
		if id == "c" {
			c.Get(ctx, "a") // a becomes most recent: b is the next victim
		}
	}
	st := c.Stats()
	if st.Len != 3 || st.Evictions != 2 {
		t.Fatalf("Stats() = %+v, want 3 cached, 2 evictions", st)
	}
	for _, tc := range []struct {
		id     string
		cached bool
	}{{"a", true}, {"b", false}, {"c", false}, {"d", true}, {"e", true}} {
		before := inner.gets.Load()
		if _, _, err := c.Get(ctx, tc.id); err != nil {
			t.Fatalf("Get(%s) error = %v", tc.id, err)
		}
		if hit := inner.gets.Load() == before; hit != tc.cached {
			t.Fatalf("Get(%s) hit = %v, want %v", tc.id, hit, tc.cached)
		}
		if !tc.cached {
			break // the miss refilled and evicted: later checks would test the refill
		}
	}
}

func TestCachedPinsMaxAge(t *testing.T) {
	inner := &countingPins{Pins: memstore.NewPins[testRecord]()}
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	c := store.NewCachedPins(inner, 10, store.WithCacheMaxAge(time.Minute), store.WithCacheClock(func() time.Time {
		return time.Unix(0, now.Load())
	}))
	ctx := t.Context()
	if _, err := c.Create(ctx, testPin("t1", 1)); err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	for _, tc := range []struct {
		advance time.Duration
		want    int64 // inner gets so far
	}{
		{0, 0},
		{59 * time.Second, 0},
		{2 * time.Second, 1},  // 61s: too old, re-read
		{30 * time.Second, 1}, // refreshed by the re-read
	} {
		now.Add(int64(tc.advance))
		if _, _, err := c.Get(ctx, "t1"); err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if got := inner.gets.Load(); got != tc.want {
			t.Fatalf("inner Gets after +%v = %d, want %d", tc.advance, got, tc.want)
		}
	}
	// A write behind the cache's back is seen once the entry is too old.
	_, rev, _ := c.Get(ctx, "t1")
	nrev, err := inner.Pins.Update(ctx, testPin("t1", 2), rev)
	if err != nil {
		t.Fatalf("other Update() error = %v", err)
	}
	now.Add(int64(time.Minute))
	if _, got, err := c.Get(ctx, "t1"); err != nil || got != nrev {
		t.Fatalf("Get() a minute after another write = rev %d, %v; want %d", got, err, nrev)
	}
}

// TestCachedPinsOwnWritesNeverStale has writers update and delete their own
// tasks through the cache while readers fill it concurrently through a slow
// inner store; after every write the writer's next read must see exactly it.
func TestCachedPinsOwnWritesNeverStale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inner func(t *testing.T) store.Pins[testRecord]
		iters int
	}{
		{"memstore", func(*testing.T) store.Pins[testRecord] {
			return &countingPins{Pins: memstore.NewPins[testRecord](), maxDelay: 200 * time.Microsecond}
		}, 300},
		{"kv", func(t *testing.T) store.Pins[testRecord] {
			return store.NewKVPins[testRecord](newKV(t, startJS(t), "pins", jetstream.KeyValueConfig{}))
		}, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := store.NewCachedPins(tc.inner(t), 8) // small: evictions race too
			ctx := t.Context()
			const writers, readers = 4, 4
			ids := []string{"w0", "w1", "w2", "w3"}
			stop := make(chan struct{})
			var rwg sync.WaitGroup
			for r := range readers {
				rwg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						c.Get(ctx, ids[(i+r)%len(ids)])
					}
				})
			}
			// readsOwnWrite reports whether the write what of id, which
			// returned rev and err, succeeded and a Get then sees it.
			readsOwnWrite := func(id, what string, rev uint64, err error) bool {
				if err != nil {
					t.Errorf("%s(%s) error = %v", what, id, err)
					return false
				}
				if _, got, err := c.Get(ctx, id); err != nil || got != rev {
					t.Errorf("Get(%s) after %s = rev %d, %v; want %d", id, what, got, err, rev)
					return false
				}
				return true
			}
			var wwg sync.WaitGroup
			for w := range writers {
				id := ids[w]
				wwg.Go(func() {
					for i := range tc.iters {
						rev, err := c.Create(ctx, testPin(id, i))
						if !readsOwnWrite(id, "Create", rev, err) {
							return
						}
						rev, err = c.Update(ctx, testPin(id, i+1), rev)
						if !readsOwnWrite(id, "Update", rev, err) {
							return
						}
						if err := c.Delete(ctx, id); err != nil {
							t.Errorf("Delete(%s) error = %v", id, err)
							return
						}
						if _, got, err := c.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
							t.Errorf("Get(%s) after Delete = rev %d, %v; want %v", id, got, err, store.ErrNotFound)
							return
						}
					}
				})
			}
			wwg.Wait()
			close(stop)
			rwg.Wait()
			t.Logf("%+v", c.Stats())
		})
	}
}

// TestCachedPinsForget: a write behind the cache's back (another process)
// is not seen while the entry stays cached; Forget drops every entry, so the
// next reads see it.
func TestCachedPinsForget(t *testing.T) {
	inner := &countingPins{Pins: memstore.NewPins[testRecord]()}
	c := store.NewCachedPins(inner, 10)
	ctx := t.Context()
	rev, err := c.Create(ctx, testPin("t1", 1))
	if err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	if _, err := c.Create(ctx, testPin("t2", 1)); err != nil {
		t.Fatalf("Create(t2) error = %v", err)
	}
	nrev, err := inner.Pins.Update(ctx, testPin("t1", 2), rev)
	if err != nil {
		t.Fatalf("other Update() error = %v", err)
	}
	if _, got, err := c.Get(ctx, "t1"); err != nil || got != rev {
		t.Fatalf("Get() before Forget = rev %d, %v; want the cached %d", got, err, rev)
	}
	c.Forget()
	if st := c.Stats(); st.Len != 0 || st.Invalidations != 2 {
		t.Fatalf("Stats() after Forget = %+v, want 0 cached, 2 invalidations", st)
	}
	if _, got, err := c.Get(ctx, "t1"); err != nil || got != nrev {
		t.Fatalf("Get() after Forget = rev %d, %v; want %d", got, err, nrev)
	}
	if _, _, err := c.Get(ctx, "t1"); err != nil || inner.gets.Load() != 1 {
		t.Fatalf("Get() again = %v with %d inner Gets; want a hit after one fill", err, inner.gets.Load())
	}
}

// gatedPins holds a Get that has read the inner store until the test
// releases it, so a test can interleave a write between a cache miss's read
// and its fill.
type gatedPins struct {
	*memstore.Pins[testRecord]
	armed    atomic.Bool
	read     chan struct{} // receives when the armed Get has read
	released chan struct{} // closed to let it return
}

func newGatedPins() *gatedPins {
	return &gatedPins{Pins: memstore.NewPins[testRecord](), read: make(chan struct{}), released: make(chan struct{})}
}

func (g *gatedPins) Get(ctx context.Context, id string) (testRecord, uint64, error) {
	pin, rev, err := g.Pins.Get(ctx, id)
	if g.armed.CompareAndSwap(true, false) {
		g.read <- struct{}{}
		<-g.released
	}
	return pin, rev, err
}

// TestCachedPinsRacingFill interleaves, deterministically, a write between
// a cache miss's read of the inner store and its fill: the stale read must
// not be served afterwards.
func TestCachedPinsRacingFill(t *testing.T) {
	for _, tc := range []struct {
		name string
		// size of the cache (0: 10).
		size int
		// write changes t1 (current revision rev) while a read is in flight
		// and returns the revision a later Get must see (0: ErrNotFound).
		write func(t *testing.T, c *store.CachedPins[testRecord], inner *gatedPins, rev uint64) uint64
	}{
		{"own-delete", 0, func(t *testing.T, c *store.CachedPins[testRecord], _ *gatedPins, _ uint64) uint64 {
			if err := c.Delete(t.Context(), "t1"); err != nil {
				t.Fatalf("Delete() error = %v", err)
			}
			return 0
		}},
		{"own-update", 0, ownUpdate},
		// The own update's entry is evicted before the read it raced fills:
		// the older read must not be cached in its place.
		{"own-update-evicted", 1, func(t *testing.T, c *store.CachedPins[testRecord], inner *gatedPins, rev uint64) uint64 {
			n := ownUpdate(t, c, inner, rev)
			if _, err := c.Create(t.Context(), testPin("t2", 1)); err != nil {
				t.Fatalf("Create(t2) error = %v", err)
			}
			if st := c.Stats(); st.Evictions != 1 {
				t.Fatalf("Stats() = %+v, want 1 eviction", st)
			}
			return n
		}},
		// Another process writes and the cache is told to Forget: the read
		// that started before Forget must not be cached.
		{"other-update-forget", 0, func(t *testing.T, c *store.CachedPins[testRecord], inner *gatedPins, rev uint64) uint64 {
			n, err := inner.Pins.Update(t.Context(), testPin("t1", 2), rev)
			if err != nil {
				t.Fatalf("Update() error = %v", err)
			}
			c.Forget()
			return n
		}},
		{"other-delete-forget", 0, func(t *testing.T, c *store.CachedPins[testRecord], inner *gatedPins, _ uint64) uint64 {
			if err := inner.Pins.Delete(t.Context(), "t1"); err != nil {
				t.Fatalf("Delete() error = %v", err)
			}
			c.Forget()
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := newGatedPins()
			size := tc.size
			if size == 0 {
				size = 10
			}
			c := store.NewCachedPins(inner, size)
			rev, err := inner.Pins.Create(t.Context(), testPin("t1", 1))
			if err != nil {
				t.Fatalf("Create() error = %v", err)
			}

			inner.armed.Store(true)
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.Get(t.Context(), "t1") // misses, reads rev, waits
			}()
			<-inner.read
			want := tc.write(t, c, inner, rev)
			close(inner.released)
			<-done

			for i := range 2 { // the first Get may refill; the second may hit
				_, got, err := c.Get(t.Context(), "t1")
				if want == 0 {
					if !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("Get #%d = rev %d, %v; want %v", i+1, got, err, store.ErrNotFound)
					}
					continue
				}
				if err != nil || got != want {
					t.Fatalf("Get #%d = rev %d, %v; want rev %d", i+1, got, err, want)
				}
			}
		})
	}
}

func ownUpdate(t *testing.T, c *store.CachedPins[testRecord], _ *gatedPins, rev uint64) uint64 {
	n, err := c.Update(t.Context(), testPin("t1", 2), rev)
	if err != nil {
		t.Fatalf("Update() error = %v", err)
	}
	return n
}

// recordSize is a size function for WithCacheBytes: the ETag's length
// (which the tests below make large) stands for the pin's size.
func recordSize(r testRecord) int64 { return int64(len(r.ETag)) }

// bigPin is a pin whose recordSize is kib KiB.
func bigPin(id string, kib int) testRecord {
	p := testPin(id, 0)
	p.ETag = strings.Repeat("e", kib<<10)
	return p
}

// entrySize is what the cache counts for a pin of recordSize s.
func entrySize(id string, s int64) int64 { return s + int64(len(id)) + store.CacheEntryOverhead }

func TestCachedPinsEvictsByBytes(t *testing.T) {
	inner := &countingPins{Pins: memstore.NewPins[testRecord]()}
	limit := 3*entrySize("a", 100<<10) + 10
	c := store.NewCachedPins(inner, 1000, store.WithCacheBytes(limit, recordSize))
	ctx := t.Context()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.Create(ctx, bigPin(id, 100)); err != nil {
			t.Fatalf("Create(%s) error = %v", id, err)
		}
	}
	if st := c.Stats(); st.Len != 3 || st.Evictions != 0 || st.Bytes != 3*entrySize("a", 100<<10) {
		t.Fatalf("Stats() after 3 × 100 KiB = %+v, want 3 cached, no eviction, %d bytes", st, 3*entrySize("a", 100<<10))
	}
	c.Get(ctx, "a") // a is the most recent: b, then c, are the next victims
	// 150 KiB more: b and c must go (a + d = 250 KiB fits, a + c + d does not).
	if _, err := c.Create(ctx, bigPin("d", 150)); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if want := entrySize("a", 100<<10) + entrySize("d", 150<<10); st.Len != 2 || st.Evictions != 2 || st.Bytes != want {
		t.Fatalf("Stats() after a 150 KiB pin = %+v, want 2 cached (a, d), 2 evictions, %d bytes", st, want)
	}
	if st.Bytes > limit {
		t.Fatalf("Stats().Bytes = %d > limit %d", st.Bytes, limit)
	}
	for _, tc := range []struct {
		id     string
		cached bool
	}{{"a", true}, {"d", true}, {"b", false}} {
		before := inner.gets.Load()
		if _, _, err := c.Get(ctx, tc.id); err != nil {
			t.Fatalf("Get(%s) error = %v", tc.id, err)
		}
		if hit := inner.gets.Load() == before; hit != tc.cached {
			t.Fatalf("Get(%s) hit = %v, want %v", tc.id, hit, tc.cached)
		}
	}
}

func TestCachedPinsBytesUpdateAndOversize(t *testing.T) {
	inner := &countingPins{Pins: memstore.NewPins[testRecord]()}
	limit := int64(1 << 20)
	c := store.NewCachedPins(inner, 1000, store.WithCacheBytes(limit, recordSize))
	ctx := t.Context()
	rev, err := c.Create(ctx, bigPin("t", 10))
	if err != nil {
		t.Fatal(err)
	}
	// An update replaces the entry's size, it does not add to it.
	if rev, err = c.Update(ctx, bigPin("t", 20), rev); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Len != 1 || st.Bytes != entrySize("t", 20<<10) {
		t.Fatalf("Stats() after an update = %+v, want 1 cached of %d bytes", st, entrySize("t", 20<<10))
	}
	// A pin larger than the whole bound is not cached (and the older copy
	// goes): reads of it go through and see the new revision.
	nrev, err := c.Update(ctx, bigPin("t", 1024), rev)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Len != 0 || st.Bytes != 0 {
		t.Fatalf("Stats() after an oversize update = %+v, want nothing cached", st)
	}
	before := inner.gets.Load()
	if _, grev, err := c.Get(ctx, "t"); err != nil || grev != nrev {
		t.Fatalf("Get(t) = rev %d, %v, want %d", grev, err, nrev)
	}
	if inner.gets.Load() != before+1 {
		t.Fatal("Get of an oversize pin did not read through")
	}
	// Deletes and invalidations give their bytes back.
	if _, err := c.Create(ctx, bigPin("u", 5)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Bytes != 0 {
		t.Fatalf("Stats() after Delete = %+v, want 0 bytes", st)
	}
}

// A long flood of pins never holds more than the bound, however many
// distinct tasks it writes (the count bound alone would keep them all).
func TestCachedPinsBytesBoundHolds(t *testing.T) {
	inner := memstore.NewPins[testRecord]()
	limit := int64(512 << 10)
	c := store.NewCachedPins(inner, 100_000, store.WithCacheBytes(limit, recordSize))
	ctx := context.Background()
	for i := range 500 {
		id := "flood-" + strings.Repeat("x", i%50) + string(rune('a'+i%26))
		p := bigPin(id, 1+i%40)
		p.TaskID = id
		if _, err := c.Create(ctx, p); err != nil {
			if _, _, gerr := c.Get(ctx, id); gerr != nil {
				t.Fatal(err)
			}
			continue
		}
		if st := c.Stats(); st.Bytes > limit {
			t.Fatalf("after %d pins Stats().Bytes = %d > %d", i+1, st.Bytes, limit)
		}
	}
	if st := c.Stats(); st.Len == 0 || st.Evictions == 0 {
		t.Fatalf("Stats() = %+v, want entries cached and evicted", st)
	}
}

func TestWithCacheBytesWrongType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewCachedPins with a size func of another type did not panic")
		}
	}()
	store.NewCachedPins(memstore.NewPins[testRecord](), 10, store.WithCacheBytes(1<<20, func(string) int64 { return 0 }))
}

func TestCachedPinsDetachesWrites(t *testing.T) {
	var detached atomic.Int64
	detach := func(r testRecord) testRecord {
		detached.Add(1)
		r.ETag = strings.Clone(r.ETag)
		return r
	}
	inner := memstore.NewPins[testRecord]()
	c := store.NewCachedPins(inner, 10, store.WithCacheDetach(detach))
	ctx := t.Context()
	big := strings.Repeat("b", 1<<20)
	p := testPin("t", 1)
	p.ETag = big[:8] // a slice of a much larger string
	rev, err := c.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Get(ctx, "t")
	if err != nil || got.ETag != p.ETag {
		t.Fatalf("Get(t) = %+v, %v", got, err)
	}
	if unsafe.StringData(got.ETag) == unsafe.StringData(big) {
		t.Fatal("the cached pin shares the written pin's string")
	}
	if _, err := c.Update(ctx, p, rev); err != nil {
		t.Fatal(err)
	}
	if got := detached.Load(); got != 2 {
		t.Fatalf("detach calls after Create and Update = %d, want 2", got)
	}
	// Reads through the inner store are not detached again.
	other := testPin("u", 2)
	if _, err := inner.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := detached.Load(); got != 2 {
		t.Fatalf("detach calls after a read-through = %d, want 2", got)
	}
}

// FuzzCachedPinsBytes runs a sequence of writes, reads and deletes of pins
// of assorted sizes through a byte-bounded cache: the bytes it counts never
// exceed the bound and come back to zero when every pin is deleted, and a
// read always returns the latest write.
func FuzzCachedPinsBytes(f *testing.F) {
	f.Add([]byte{1, 10, 200, 3, 255, 7, 64, 128})
	f.Add([]byte{255, 255, 255, 255})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const limit = 64 << 10
		c := store.NewCachedPins(memstore.NewPins[testRecord](), 8, store.WithCacheBytes(limit, recordSize))
		ctx := context.Background()
		latest := map[string]string{}
		for i, op := range ops {
			id := "t" + strconv.Itoa(int(op%5))
			switch op % 3 {
			case 0, 1: // write a pin of (op/3)×512 bytes
				p := bigPin(id, 0)
				p.ETag = string(make([]byte, int(op/3)*512)) + strconv.Itoa(i)
				_, rev, err := c.Get(ctx, id)
				switch {
				case errors.Is(err, store.ErrNotFound):
					_, err = c.Create(ctx, p)
				case err == nil:
					_, err = c.Update(ctx, p, rev)
				}
				if err != nil {
					t.Fatalf("op %d: write %s: %v", i, id, err)
				}
				latest[id] = p.ETag
			case 2:
				if err := c.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				delete(latest, id)
			}
			if st := c.Stats(); st.Bytes > limit || st.Bytes < 0 {
				t.Fatalf("op %d: Stats().Bytes = %d, want within [0, %d]", i, st.Bytes, limit)
			}
			for id, etag := range latest {
				got, _, err := c.Get(ctx, id)
				if err != nil || got.ETag != etag {
					t.Fatalf("op %d: Get(%s) = %d-byte ETag, %v; want the latest write's %d bytes", i, id, len(got.ETag), err, len(etag))
				}
			}
		}
		for id := range latest {
			if err := c.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if st := c.Stats(); st.Bytes != 0 || st.Len != 0 {
			t.Fatalf("after deleting every pin Stats() = %+v, want nothing cached", st)
		}
	})
}

// BenchmarkPinLookup compares, in one run on one embedded server, a pin
// lookup through CachedPins (warm) with the baseline it replaces on the hot
// path: a direct KV Get of the same pin plus its JSON decode. The cached
// sub-benchmark reports the ratio to the kv-get one as "x-kv-get".
func BenchmarkPinLookup(b *testing.B) {
	const pins = 1000
	js := startJS(b)
	ctx := context.Background()
	st, err := store.Open[testRecord](ctx, js, store.Config{})
	if err != nil {
		b.Fatalf("Open() error = %v", err)
	}
	ids := make([]string, pins)
	for i := range ids {
		ids[i] = "task-" + strconv.Itoa(i)
		if _, err := st.Pins.Create(ctx, testPin(ids[i], i)); err != nil {
			b.Fatalf("Create() error = %v", err)
		}
	}
	var kvNsPerOp float64

	b.Run("kv-get", func(b *testing.B) {
		kv := st.Pins.KV()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e, err := kv.Get(ctx, store.EncodeKey(ids[i%pins]))
			if err != nil {
				b.Fatalf("kv.Get() error = %v", err)
			}
			var p testRecord
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				b.Fatalf("json.Unmarshal() error = %v", err)
			}
		}
		kvNsPerOp = reportRate(b)
	})

	b.Run("cached", func(b *testing.B) {
		c := store.NewCachedPins(st.Pins, pins)
		for _, id := range ids { // warm
			if _, _, err := c.Get(ctx, id); err != nil {
				b.Fatalf("Get() error = %v", err)
			}
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, _, err := c.Get(ctx, ids[i%pins]); err != nil {
				b.Fatalf("Get() error = %v", err)
			}
		}
		ns := reportRate(b)
		if kvNsPerOp > 0 && ns > 0 {
			b.ReportMetric(kvNsPerOp/ns, "x-kv-get")
		}
		if st := c.Stats(); st.Misses != pins {
			b.Fatalf("misses = %d, want %d (only the warm-up)", st.Misses, pins)
		}
	})
}

// reportRate reports ops/s and returns ns/op of the benchmark so far.
func reportRate(b *testing.B) float64 {
	el := b.Elapsed()
	if el <= 0 || b.N == 0 {
		return 0
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
	return float64(el.Nanoseconds()) / float64(b.N)
}
