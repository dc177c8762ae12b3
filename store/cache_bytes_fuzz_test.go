package store_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

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
		runCache(t, c)
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
