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

func TestCheckReplicas(t *testing.T) {
	a, b := "sha256:"+hex64('a'), "sha256:"+hex64('b')
	for _, tc := range []struct {
		name    string
		digests []string
		want    bool
	}{
		{"none", nil, false},
		{"one digest", []string{a}, false},
		{"one digest twice", []string{a, a}, false},
		{"two digests", []string{b, a}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := CheckReplicas(tc.digests, 2*time.Minute)
			if ok != tc.want {
				t.Fatalf("CheckReplicas(%v) = %v, want %v", tc.digests, ok, tc.want)
			}
			if !ok {
				return
			}
			if f.Rule != RuleReplicasDisagree || f.Severity != Warning || f.Path != "" {
				t.Errorf("finding = %+v", f)
			}
			if got := f.After.([]string); len(got) != 2 || got[0] != a || got[1] != b {
				t.Errorf("After = %v, want the digests sorted", got)
			}
			want := `replicas behind the agent's URL serve different cards ("` + a + `", "` + b + `") within 2m0s: a task on it may meet either at its next step`
			if f.Message != want {
				t.Errorf("Message = %q, want %q", f.Message, want)
			}
		})
	}
}

// A replicas-disagree finding is a warning: it touches every task but never
// changes what a task does.
func TestReplicasDisagreeNeverDecides(t *testing.T) {
	f, _ := CheckReplicas([]string{"sha256:" + hex64('a'), "sha256:" + hex64('b')}, time.Minute)
	for _, posture := range []Posture{FailClosed, Degrade} {
		_, v := Evaluate(testCard(), testCard(), Requirements{SkillID: "summarize"}, posture, f)
		if v.Action != Continue || len(v.Impacting) != 1 {
			t.Errorf("%s: verdict %+v, want continue with the warning impacting", posture, v)
		}
	}
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
