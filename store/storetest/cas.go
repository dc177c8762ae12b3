package storetest

import (
	"errors"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// Contention of casRace: goroutines × attempts each.
const (
	casGoroutines = 50
	casAttempts   = 10
)

func casHolder(n int) string { return "w" + strconv.Itoa(n) }

type casWin struct {
	base, rev uint64
	holder    string
}

// casRace has casGoroutines goroutines get and compare-and-set one key
// casAttempts times each, all at once, then checks linearizability: the
// wins form one chain from start, each revision won once, and the final
// value is the last winner's.
func casRace(t *testing.T, start uint64,
	update func(n int, base uint64) (uint64, error),
	get func() (holder string, rev uint64, err error),
) {
	t.Helper()
	var (
		mu        sync.Mutex
		wins      []casWin
		conflicts int
		wg        sync.WaitGroup
		gate      = make(chan struct{})
	)
	for g := range casGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for a := range casAttempts {
				n := g*casAttempts + a
				_, base, err := get()
				if err != nil {
					t.Errorf("get() error = %v", err)
					return
				}
				rev, err := update(n, base)
				mu.Lock()
				switch {
				case err == nil:
					wins = append(wins, casWin{base: base, rev: rev, holder: casHolder(n)})
				case errors.Is(err, store.ErrConflict):
					conflicts++
				default:
					t.Errorf("update(base %d) error = %v", base, err)
				}
				mu.Unlock()
			}
		}()
	}
	close(gate)
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(wins) == 0 {
		t.Fatalf("wins = 0, want > 0 (conflicts %d)", conflicts)
	}
	bases := map[uint64]int{}
	revs := map[uint64]int{}
	for _, w := range wins {
		bases[w.base]++
		revs[w.rev]++
	}
	for base, n := range bases {
		if n != 1 {
			t.Fatalf("winners of revision %d = %d, want 1", base, n)
		}
	}
	if len(revs) != len(wins) {
		t.Fatalf("distinct new revisions = %d, want %d (one per success)", len(revs), len(wins))
	}
	sort.Slice(wins, func(i, j int) bool { return wins[i].base < wins[j].base })
	prev := start
	for i, w := range wins {
		if w.base != prev {
			t.Fatalf("win %d based on revision %d, want %d (the previous win's)", i, w.base, prev)
		}
		prev = w.rev
	}
	holder, rev, err := get()
	if err != nil {
		t.Fatalf("final get() error = %v", err)
	}
	last := wins[len(wins)-1]
	if rev != last.rev {
		t.Fatalf("final revision = %d, want %d", rev, last.rev)
	}
	if holder != last.holder {
		t.Fatalf("final holder = %q, want %q", holder, last.holder)
	}
	if got, want := len(wins)+conflicts, casGoroutines*casAttempts; got != want {
		t.Fatalf("wins+conflicts = %d, want %d", got, want)
	}
	t.Logf("%d wins, %d conflicts", len(wins), conflicts)
}
