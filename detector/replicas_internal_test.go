package detector

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestDisagreeCountsWhatPruneKeeps holds Disagree, which counts in place, to
// its definition on the pruned window, over random windows and clocks.
func TestDisagreeCountsWhatPruneKeeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const window = time.Minute
	split := 0
	for i := range 20000 {
		var r Replicas
		at := t0
		for range rng.IntN(12) {
			at = at.Add(time.Duration(rng.IntN(40)) * time.Second)
			r = r.Observe(string(rune('a'+rng.IntN(3))), at, window)
		}
		now := at.Add(time.Duration(rng.IntN(90)) * time.Second)
		p := r.prune(now, window)
		want := len(p.Returns) >= SplitBrainReturns && len(p.Seen) >= 2
		if want {
			split++
		}
		if got := r.Disagree(now, window); got != want {
			t.Fatalf("case %d: Disagree(%v) = %v, want %v (window %+v)", i, now, got, want, r)
		}
	}
	if split < 100 {
		t.Fatalf("only %d of the random windows disagree: the test does not reach split brain", split)
	}
}
