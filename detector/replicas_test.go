package detector_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// TestReplicasSplitBrain is the consistency table: which sequences of live
// digests, fetch after fetch, are split brain within the window.
func TestReplicasSplitBrain(t *testing.T) {
	const window = 2 * time.Minute
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		seq  string        // one digest per letter, one fetch every step
		step time.Duration // between fetches
		want bool          // split brain after the last fetch
		// since is the fetch (0-based) that began the episode, -1 none.
		since int
	}{
		{"stable", "AAAAAA", time.Second, false, -1},
		{"rolling deploy: A→B, never back", "AAABBBBB", time.Second, false, -1},
		{"single flip: A→B", "AB", time.Second, false, -1},
		{"single flip and back: A→B→A", "AAABBBAAA", time.Second, false, -1},
		{"split brain: A→B→A→B", "ABAB", time.Second, true, 3},
		{"split brain: alternating", "ABABABAB", time.Second, true, 3},
		{"split brain with runs", "AABBAAAB", time.Second, true, 7},
		{"split brain among three", "ABCABC", time.Second, true, 4},
		{"alternation slower than the window", "ABAB", 70 * time.Second, false, -1},
		{"split brain ends when the window forgets it", "ABABAAAA", 50 * time.Second, false, -1},
		{"deploy after a rollback: A→B→A→C", "ABAC", time.Second, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r detector.Replicas
			since := -1
			at := t0
			for i, c := range tc.seq {
				at = t0.Add(time.Duration(i) * tc.step)
				was := r.Since
				r = r.Observe(fmt.Sprintf("sha256:%c", c), at, window)
				if !r.Since.IsZero() && r.Since != was {
					since = i
				}
			}
			if got := r.Disagree(at, window); got != tc.want {
				t.Errorf("Disagree after %s = %v, want %v (window %+v)", tc.seq, got, tc.want, r)
			}
			if tc.want && since != tc.since {
				t.Errorf("episode began at fetch %d, want %d", since, tc.since)
			}
			if !tc.want && !r.Since.IsZero() {
				t.Errorf("Since = %v after %s, want none", r.Since, tc.seq)
			}
			if len(r.Seen) > detector.MaxSightings || len(r.Returns) > detector.MaxReturns {
				t.Errorf("window over its bounds: %+v", r)
			}
		})
	}
}

// An episode keeps its start while it lasts, so that every worker names it
// the same; one that ends and comes back is a new episode.
func TestReplicasEpisode(t *testing.T) {
	const window = 10 * time.Second
	t0 := time.Unix(1_700_000_000, 0).UTC()
	var r detector.Replicas
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for i, d := range []string{"a", "b", "a", "b"} {
		r = r.Observe(d, at(i), window)
	}
	first := r.Since
	if first != at(3) {
		t.Fatalf("Since = %v, want %v", first, at(3))
	}
	r.Reported = true
	r = r.Observe("a", at(4), window)
	if r.Since != first || !r.Reported {
		t.Errorf("the episode changed while it lasts: %+v", r)
	}
	if r.Disagree(at(30), window) {
		t.Errorf("Disagree 30s later (nothing seen within the window) = true")
	}
	r = r.Observe("a", at(30), window)
	if !r.Since.IsZero() || r.Reported {
		t.Errorf("episode not ended: %+v", r)
	}
	for i, d := range []string{"b", "a", "b"} {
		r = r.Observe(d, at(31+i), window)
	}
	if r.Since != at(33) || r.Reported {
		t.Errorf("new episode = %+v, want since %v, not reported", r, at(33))
	}
	if got := r.Window(at(33), window); len(got) != 2 || got[0].Digest != "a" || got[1].Digest != "b" || got[1].Count != 2 {
		t.Errorf("Window = %+v", got)
	}
}

// TestReplicasMemory reports what a window costs on a lease: the JSON bytes
// of a stable agent's and of an agent in split brain (bounded whatever the
// window), per 1,000 agents.
func TestReplicasMemory(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	digest := func(c byte) string {
		b := []byte("sha256:")
		for range 64 {
			b = append(b, c)
		}
		return string(b)
	}
	var stable, split detector.Replicas
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * time.Second)
		stable = stable.Observe(digest('a'), at, 2*time.Minute)
		split = split.Observe(digest(byte('a'+i%detector.MaxSightings)), at, 2*time.Minute)
	}
	s1, _ := json.Marshal(stable)
	s2, _ := json.Marshal(split)
	if len(split.Seen) != detector.MaxSightings || len(split.Returns) != detector.MaxReturns {
		t.Fatalf("split window not at its bounds: %d sightings, %d returns", len(split.Seen), len(split.Returns))
	}
	t.Logf("digest window per lease: stable agent %d bytes, split brain at its bound %d bytes (JSON); per 1,000 agents %.0f KB to %.0f KB",
		len(s1), len(s2), float64(len(s1))*1000/1024, float64(len(s2))*1000/1024)
	if len(s2) > 1024 {
		t.Errorf("a window at its bound takes %d bytes, want at most 1 KiB", len(s2))
	}
}
