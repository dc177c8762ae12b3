package storetest

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// casStore is the compare-and-set contract store.Pins and store.Leases
// share.
type casStore[V any] interface {
	Create(ctx context.Context, v V) (uint64, error)
	Get(ctx context.Context, key string) (V, uint64, error)
	Update(ctx context.Context, v V, rev uint64) (uint64, error)
}

// casValues makes what casSuite writes: the n-th value under a key, and
// the mark of the holder that won it, for casRace.
type casValues[V any] struct {
	value  func(key string, n int) V
	mark   func(v V, holder string) V
	holder func(v V) string
}

// casSuite runs the subtests every compare-and-set store passes, writing
// under key.
func casSuite[V any](t *testing.T, newStore func(t *testing.T) casStore[V], key string, vs casValues[V]) {
	missing := key + "/never-written"
	update := func(t *testing.T, s casStore[V]) (old, cur uint64, want V) {
		t.Helper()
		old = mustCreate(t, s, vs.value(key, 1))
		want = vs.value(key, 2)
		cur, err := s.Update(t.Context(), want, old)
		if err != nil {
			t.Fatalf("Update() error = %v", err)
		}
		if cur <= old {
			t.Fatalf("Update() rev = %d, want > %d", cur, old)
		}
		return old, cur, want
	}

	t.Run("create-get", func(t *testing.T) {
		s := newStore(t)
		want := vs.value(key, 1)
		wantStored(t, s, key, want, mustCreate(t, s, want), "after Create")
	})

	t.Run("create-twice", func(t *testing.T) {
		s := newStore(t)
		first := vs.value(key, 1)
		rev := mustCreate(t, s, first)
		if _, err := s.Create(t.Context(), vs.value(key, 2)); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Create() error = %v, want %v", err, store.ErrExists)
		}
		wantStored(t, s, key, first, rev, "(first create)")
	})

	t.Run("get-missing", func(t *testing.T) {
		if _, _, err := newStore(t).Get(t.Context(), missing); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("update", func(t *testing.T) {
		s := newStore(t)
		_, cur, want := update(t, s)
		wantStored(t, s, key, want, cur, "after Update")
	})

	t.Run("update-stale", func(t *testing.T) {
		s := newStore(t)
		old, cur, want := update(t, s)
		for _, stale := range []uint64{old, 0, cur + 1000} {
			if _, err := s.Update(t.Context(), vs.value(key, 3), stale); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(rev %d, current %d) error = %v, want %v", stale, cur, err, store.ErrConflict)
			}
		}
		wantStored(t, s, key, want, cur, "after stale Updates")
	})

	t.Run("update-missing", func(t *testing.T) {
		s := newStore(t)
		for _, rev := range []uint64{0, 1, 99} {
			if _, err := s.Update(t.Context(), vs.value(missing, 1), rev); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Update(missing, rev %d) error = %v, want %v", rev, err, store.ErrNotFound)
			}
		}
		if _, _, err := s.Get(t.Context(), missing); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get() after Update(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("ids", func(t *testing.T) {
		s := newStore(t)
		ids := IDs()
		names := make([]string, 0, len(ids))
		for name := range ids {
			names = append(names, name)
		}
		sort.Strings(names)
		revs := map[string]uint64{}
		for i, name := range names {
			rev, err := s.Create(t.Context(), vs.value(ids[name], i))
			if err != nil {
				t.Fatalf("Create(%s %q) error = %v", name, short(ids[name]), err)
			}
			revs[name] = rev
		}
		for i, name := range names {
			id := ids[name]
			wantStored(t, s, id, vs.value(id, i), revs[name], name)
			nrev, err := s.Update(t.Context(), vs.value(id, i+100), revs[name])
			if err != nil {
				t.Fatalf("Update(%s) error = %v", name, err)
			}
			if _, err := s.Update(t.Context(), vs.value(id, i+200), revs[name]); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(%s, stale) error = %v, want %v", name, err, store.ErrConflict)
			}
			wantStored(t, s, id, vs.value(id, i+100), nrev, name+" after Update")
		}
	})

	t.Run("concurrent-cas", func(t *testing.T) {
		s := newStore(t)
		rev := mustCreate(t, s, vs.value(key, 0))
		casRace(t, rev, func(n int, base uint64) (uint64, error) {
			return s.Update(t.Context(), vs.mark(vs.value(key, n), casHolder(n)), base)
		}, func() (string, uint64, error) {
			v, rev, err := s.Get(t.Context(), key)
			return vs.holder(v), rev, err
		})
	})
}

// wantStored checks that s holds want under key at revision rev.
func wantStored[V any](t *testing.T, s casStore[V], key string, want V, rev uint64, what string) {
	t.Helper()
	got, grev, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get() %s error = %v", what, err)
	}
	if grev != rev {
		t.Fatalf("Get() %s rev = %d, want %d", what, grev, rev)
	}
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Fatalf("Get() %s = %.200s, want %.200s", what, g, w)
	}
}

// mustCreate creates v in s and returns its positive revision.
func mustCreate[V any](t *testing.T, s casStore[V], v V) uint64 {
	t.Helper()
	rev, err := s.Create(t.Context(), v)
	if err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	if rev == 0 {
		t.Fatalf("Create() rev = 0, want > 0")
	}
	return rev
}
