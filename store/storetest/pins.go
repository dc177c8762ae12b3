package storetest

import (
	"errors"
	"sort"
	"strconv"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// Pins runs the conformance suite for store.Pins. newPins returns an empty
// store for each subtest.
func Pins(t *testing.T, newPins func(t *testing.T) store.Pins[Record]) {
	t.Run("scan", func(t *testing.T) {
		ps := newPins(t)
		scanSuite(t, ps, func(i int) (string, uint64) {
			p := Pin("scan-"+strconv.Itoa(i), i)
			rev, err := ps.Create(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			return p.TaskID, rev
		}, func(id string) {
			if err := ps.Delete(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}, func(r Record) string { return r.TaskID })
	})

	t.Run("create-get", func(t *testing.T) {
		ps := newPins(t)
		want := Pin("t1", 1)
		rev, err := ps.Create(t.Context(), want)
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		if rev == 0 {
			t.Fatalf("Create() rev = 0, want > 0")
		}
		got, grev, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if grev != rev {
			t.Fatalf("Get() rev = %d, want %d", grev, rev)
		}
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Fatalf("Get() = %s, want %s", g, w)
		}
	})

	t.Run("create-twice", func(t *testing.T) {
		ps := newPins(t)
		first := Pin("t1", 1)
		rev, err := ps.Create(t.Context(), first)
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		_, err = ps.Create(t.Context(), Pin("t1", 2))
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Create() error = %v, want %v", err, store.ErrExists)
		}
		got, grev, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if grev != rev {
			t.Fatalf("Get() rev = %d, want %d (first create)", grev, rev)
		}
		if g, w := jsonOf(t, got), jsonOf(t, first); g != w {
			t.Fatalf("Get() = %s, want %s (first create)", g, w)
		}
	})

	t.Run("get-missing", func(t *testing.T) {
		ps := newPins(t)
		_, _, err := ps.Get(t.Context(), "nope")
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("update", func(t *testing.T) {
		ps := newPins(t)
		rev, err := ps.Create(t.Context(), Pin("t1", 1))
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		want := Pin("t1", 2)
		nrev, err := ps.Update(t.Context(), want, rev)
		if err != nil {
			t.Fatalf("Update() error = %v", err)
		}
		if nrev <= rev {
			t.Fatalf("Update() rev = %d, want > %d", nrev, rev)
		}
		got, grev, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if grev != nrev {
			t.Fatalf("Get() rev = %d, want %d", grev, nrev)
		}
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Fatalf("Get() = %s, want %s", g, w)
		}
	})

	t.Run("update-stale", func(t *testing.T) {
		ps := newPins(t)
		rev, err := ps.Create(t.Context(), Pin("t1", 1))
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		want := Pin("t1", 2)
		nrev, err := ps.Update(t.Context(), want, rev)
		if err != nil {
			t.Fatalf("Update() error = %v", err)
		}
		for _, stale := range []uint64{rev, 0, nrev + 1000} {
			_, err = ps.Update(t.Context(), Pin("t1", 3), stale)
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(rev %d, current %d) error = %v, want %v", stale, nrev, err, store.ErrConflict)
			}
		}
		got, grev, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if grev != nrev {
			t.Fatalf("Get() rev = %d, want %d", grev, nrev)
		}
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Fatalf("Get() = %s, want %s", g, w)
		}
	})

	t.Run("update-missing", func(t *testing.T) {
		ps := newPins(t)
		for _, rev := range []uint64{0, 1, 99} {
			_, err := ps.Update(t.Context(), Pin("never", 1), rev)
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Update(missing, rev %d) error = %v, want %v", rev, err, store.ErrNotFound)
			}
		}
		_, _, err := ps.Get(t.Context(), "never")
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get() after Update(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("delete", func(t *testing.T) {
		ps := newPins(t)
		rev, err := ps.Create(t.Context(), Pin("t1", 1))
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		if err := ps.Delete(t.Context(), "t1"); err != nil {
			t.Fatalf("Delete() error = %v", err)
		}
		if _, _, err := ps.Get(t.Context(), "t1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get() after Delete error = %v, want %v", err, store.ErrNotFound)
		}
		if _, err := ps.Update(t.Context(), Pin("t1", 2), rev); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Update() after Delete error = %v, want %v", err, store.ErrNotFound)
		}
		if err := ps.Delete(t.Context(), "t1"); err != nil {
			t.Fatalf("Delete() twice error = %v, want nil", err)
		}
		if err := ps.Delete(t.Context(), "never-existed"); err != nil {
			t.Fatalf("Delete(missing) error = %v, want nil", err)
		}
		want := Pin("t1", 3)
		nrev, err := ps.Create(t.Context(), want)
		if err != nil {
			t.Fatalf("Create() after Delete error = %v", err)
		}
		if nrev <= rev {
			t.Fatalf("Create() after Delete rev = %d, want > %d", nrev, rev)
		}
		got, grev, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() after re-Create error = %v", err)
		}
		if grev != nrev {
			t.Fatalf("Get() rev = %d, want %d", grev, nrev)
		}
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Fatalf("Get() = %s, want %s", g, w)
		}
	})

	t.Run("revisions-increase", func(t *testing.T) {
		ps := newPins(t)
		var last uint64
		for i, id := range []string{"a", "b", "c", "a", "b"} {
			var rev uint64
			var err error
			if i < 3 {
				rev, err = ps.Create(t.Context(), Pin(id, i))
			} else {
				_, cur, gerr := ps.Get(t.Context(), id)
				if gerr != nil {
					t.Fatalf("Get(%q) error = %v", id, gerr)
				}
				rev, err = ps.Update(t.Context(), Pin(id, i), cur)
			}
			if err != nil {
				t.Fatalf("write %d (%q) error = %v", i, id, err)
			}
			if rev <= last {
				t.Fatalf("write %d (%q) rev = %d, want > %d", i, id, rev, last)
			}
			last = rev
		}
	})

	t.Run("ids", func(t *testing.T) {
		ps := newPins(t)
		ids := IDs()
		names := make([]string, 0, len(ids))
		for name := range ids {
			names = append(names, name)
		}
		sort.Strings(names)
		revs := map[string]uint64{}
		for i, name := range names {
			id := ids[name]
			rev, err := ps.Create(t.Context(), Pin(id, i))
			if err != nil {
				t.Fatalf("Create(%s %q) error = %v", name, short(id), err)
			}
			revs[name] = rev
		}
		for i, name := range names {
			id := ids[name]
			got, rev, err := ps.Get(t.Context(), id)
			if err != nil {
				t.Fatalf("Get(%s %q) error = %v", name, short(id), err)
			}
			if rev != revs[name] {
				t.Fatalf("Get(%s) rev = %d, want %d", name, rev, revs[name])
			}
			if g, w := jsonOf(t, got), jsonOf(t, Pin(id, i)); g != w {
				t.Fatalf("Get(%s) = %.200s, want %.200s", name, g, w)
			}
			nrev, err := ps.Update(t.Context(), Pin(id, i+100), rev)
			if err != nil {
				t.Fatalf("Update(%s) error = %v", name, err)
			}
			if _, err := ps.Update(t.Context(), Pin(id, i+200), rev); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(%s, stale) error = %v, want %v", name, err, store.ErrConflict)
			}
			_, grev, err := ps.Get(t.Context(), id)
			if err != nil || grev != nrev {
				t.Fatalf("Get(%s) after Update = rev %d, %v; want rev %d, nil", name, grev, err, nrev)
			}
		}
		for _, name := range names {
			if err := ps.Delete(t.Context(), ids[name]); err != nil {
				t.Fatalf("Delete(%s) error = %v", name, err)
			}
			if _, _, err := ps.Get(t.Context(), ids[name]); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get(%s) after Delete error = %v, want %v", name, err, store.ErrNotFound)
			}
		}
	})

	t.Run("invalid-utf8-id", func(t *testing.T) {
		ps := newPins(t)
		if _, err := ps.Create(t.Context(), Pin("bad\xff", 1)); !errors.Is(err, store.ErrInvalidID) {
			t.Fatalf("Create(invalid UTF-8) error = %v, want %v", err, store.ErrInvalidID)
		}
		if _, err := ps.Update(t.Context(), Pin("bad\xff", 1), 1); !errors.Is(err, store.ErrInvalidID) {
			t.Fatalf("Update(invalid UTF-8) error = %v, want %v", err, store.ErrInvalidID)
		}
		if _, _, err := ps.Get(t.Context(), "bad\xff"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(invalid UTF-8) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		ps := newPins(t)
		p := Pin("t1", 1)
		want := jsonOf(t, p)
		if _, err := ps.Create(t.Context(), p); err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		p.Requirements.InputModes[0] = "mutated/by-caller"
		got, _, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		got.Requirements.OutputModes[0] = "mutated/by-reader"
		again, _, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if g := jsonOf(t, again); g != want {
			t.Fatalf("Get() after caller mutations = %s, want %s", g, want)
		}
	})

	t.Run("concurrent-cas", func(t *testing.T) {
		ps := newPins(t)
		p := Pin("contended", 0)
		rev, err := ps.Create(t.Context(), p)
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		casRace(t, rev, func(n int, base uint64) (uint64, error) {
			p := Pin("contended", n)
			p.ETag = casHolder(n)
			return ps.Update(t.Context(), p, base)
		}, func() (string, uint64, error) {
			p, rev, err := ps.Get(t.Context(), "contended")
			return p.ETag, rev, err
		})
	})
}
