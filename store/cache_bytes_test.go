package store_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

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
	runCache(t, c)
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
	runCache(t, c)
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
	runCache(t, c)
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
	runCache(t, c)
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
