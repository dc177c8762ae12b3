package storetest

import (
	"errors"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// scanSuite checks a store.Scanner: every live record once, with its
// revision; an error from fn stops the scan. value makes record i, idOf
// reads its id; del deletes an id (nil: the store cannot delete).
func scanSuite[T any](t *testing.T, s casStore[T], value func(i int) T, idOf func(T) string, del func(id string)) {
	sc, ok := s.(store.Scanner[T])
	if !ok {
		t.Skip("the store does not implement store.Scanner")
	}
	var none []string
	if err := sc.Scan(t.Context(), func(v T, _ uint64) error { none = append(none, idOf(v)); return nil }); err != nil || len(none) != 0 {
		t.Fatalf("Scan of an empty store = %v, %v; want nothing", none, err)
	}
	want := map[string]uint64{}
	for i := range 300 {
		v := value(i)
		want[idOf(v)] = mustCreate(t, s, v)
	}
	if del != nil {
		id := idOf(scanFirst(t, sc))
		del(id)
		delete(want, id)
	}
	got := map[string]uint64{}
	err := sc.Scan(t.Context(), func(v T, rev uint64) error {
		id := idOf(v)
		if _, dup := got[id]; dup {
			t.Errorf("Scan gave %q twice", id)
		}
		got[id] = rev
		return nil
	})
	if err != nil {
		t.Fatalf("Scan() error = %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("Scan gave %d records, want %d", len(got), len(want))
	}
	for id, rev := range want {
		if got[id] != rev {
			t.Errorf("Scan gave %q at revision %d, want %d", id, got[id], rev)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := sc.Scan(t.Context(), func(T, uint64) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Scan with fn failing = %v after %d call(s), want the error after 1", err, n)
	}
}

func scanFirst[T any](t *testing.T, sc store.Scanner[T]) T {
	var seen []T
	if err := sc.Scan(t.Context(), func(v T, _ uint64) error { seen = append(seen, v); return nil }); err != nil || len(seen) == 0 {
		t.Fatalf("Scan() = %v, %d records", err, len(seen))
	}
	return seen[0]
}
