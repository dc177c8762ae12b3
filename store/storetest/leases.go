package storetest

import (
	"errors"
	"sort"
	"strconv"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// Leases runs the conformance suite for store.Leases. newLeases returns an
// empty store for each subtest.
func Leases(t *testing.T, newLeases func(t *testing.T) store.Leases) {
	t.Run("scan", func(t *testing.T) {
		ls := newLeases(t)
		scanSuite(t, ls, func(i int) (string, uint64) {
			l := Lease("https://scan.example/"+strconv.Itoa(i), i)
			rev, err := ls.Create(t.Context(), l)
			if err != nil {
				t.Fatal(err)
			}
			return l.CardURL, rev
		}, nil, func(l store.Lease) string { return l.CardURL })
	})

	const url = "https://agent.example.com/.well-known/agent-card.json"

	t.Run("create-get", func(t *testing.T) {
		ls := newLeases(t)
		want := Lease(url, 1)
		rev, err := ls.Create(t.Context(), want)
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		got, grev, err := ls.Get(t.Context(), url)
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if rev == 0 || grev != rev {
			t.Fatalf("Get() rev = %d, want %d (> 0)", grev, rev)
		}
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Fatalf("Get() = %s, want %s", g, w)
		}
	})

	t.Run("create-twice", func(t *testing.T) {
		ls := newLeases(t)
		if _, err := ls.Create(t.Context(), Lease(url, 1)); err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		if _, err := ls.Create(t.Context(), Lease(url, 2)); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Create() error = %v, want %v", err, store.ErrExists)
		}
	})

	t.Run("get-missing", func(t *testing.T) {
		ls := newLeases(t)
		if _, _, err := ls.Get(t.Context(), url); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("update-and-stale", func(t *testing.T) {
		ls := newLeases(t)
		rev, err := ls.Create(t.Context(), Lease(url, 1))
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		want := Lease(url, 2)
		nrev, err := ls.Update(t.Context(), want, rev)
		if err != nil {
			t.Fatalf("Update() error = %v", err)
		}
		if nrev <= rev {
			t.Fatalf("Update() rev = %d, want > %d", nrev, rev)
		}
		for _, stale := range []uint64{rev, 0, nrev + 1000} {
			if _, err := ls.Update(t.Context(), Lease(url, 3), stale); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(rev %d, current %d) error = %v, want %v", stale, nrev, err, store.ErrConflict)
			}
		}
		got, grev, err := ls.Get(t.Context(), url)
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
		ls := newLeases(t)
		for _, rev := range []uint64{0, 1} {
			if _, err := ls.Update(t.Context(), Lease(url, 1), rev); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Update(missing, rev %d) error = %v, want %v", rev, err, store.ErrNotFound)
			}
		}
	})

	t.Run("ids", func(t *testing.T) {
		ls := newLeases(t)
		ids := IDs()
		names := make([]string, 0, len(ids))
		for name := range ids {
			names = append(names, name)
		}
		sort.Strings(names)
		for i, name := range names {
			if _, err := ls.Create(t.Context(), Lease(ids[name], i)); err != nil {
				t.Fatalf("Create(%s %q) error = %v", name, short(ids[name]), err)
			}
		}
		for i, name := range names {
			got, _, err := ls.Get(t.Context(), ids[name])
			if err != nil {
				t.Fatalf("Get(%s %q) error = %v", name, short(ids[name]), err)
			}
			if g, w := jsonOf(t, got), jsonOf(t, Lease(ids[name], i)); g != w {
				t.Fatalf("Get(%s) = %.200s, want %.200s", name, g, w)
			}
		}
	})

	t.Run("concurrent-cas", func(t *testing.T) {
		ls := newLeases(t)
		rev, err := ls.Create(t.Context(), Lease(url, 0))
		if err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		casRace(t, rev, func(n int, base uint64) (uint64, error) {
			l := Lease(url, n)
			l.Holder = casHolder(n)
			return ls.Update(t.Context(), l, base)
		}, func() (string, uint64, error) {
			l, rev, err := ls.Get(t.Context(), url)
			return l.Holder, rev, err
		})
	})
}
