package storetest

import (
	"errors"
	"strconv"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// Pins runs the conformance suite for store.Pins. newPins returns an empty
// store for each subtest.
func Pins(t *testing.T, newPins func(t *testing.T) store.Pins[Record]) {
	t.Run("scan", func(t *testing.T) {
		ps := newPins(t)
		scanSuite(t, ps, func(i int) Record { return Pin("scan-"+strconv.Itoa(i), i) }, Record.Key, func(id string) {
			if err := ps.Delete(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		})
	})

	casSuite(t, func(t *testing.T) casStore[Record] { return newPins(t) }, "t1", casValues[Record]{
		value:  Pin,
		mark:   func(p Record, holder string) Record { p.ETag = holder; return p },
		holder: func(p Record) string { return p.ETag },
	})

	t.Run("delete", func(t *testing.T) {
		ps := newPins(t)
		rev := mustCreate(t, ps, Pin("t1", 1))
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
		wantStored(t, ps, "t1", want, nrev, "after re-Create")
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

	t.Run("ids-delete", func(t *testing.T) {
		ps := newPins(t)
		for name, id := range IDs() {
			if _, err := ps.Create(t.Context(), Pin(id, 1)); err != nil {
				t.Fatalf("Create(%s %q) error = %v", name, short(id), err)
			}
			if err := ps.Delete(t.Context(), id); err != nil {
				t.Fatalf("Delete(%s) error = %v", name, err)
			}
			if _, _, err := ps.Get(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
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
}
