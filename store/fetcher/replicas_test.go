package fetcher

import (
	"context"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
)

// Every fetch, by any worker, puts its digest in the lease's window, so the
// window is the agent's, not one worker's: two fetchers taking turns over
// one shared lease see an alternation between two cards as split brain, a
// rolling deploy (A→B, never back) and a single flip and back as not.
func TestObserveKeepsTheReplicaWindow(t *testing.T) {
	forEachStore(t, func(t *testing.T, leases store.Leases, cards store.Cards) {
		a, b := cardJSON("1", true), cardJSON("1", false)
		for _, tc := range []struct {
			name  string
			seq   [][]byte
			split bool
		}{
			{"split brain", [][]byte{a, b, a, b, a}, true},
			{"rolling deploy", [][]byte{a, a, b, b, b}, false},
			{"single flip and back", [][]byte{a, b, b, a, a}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ag := newAgent(t, a, "", "no-cache")
				clk := newClock()
				var fs []*Fetcher
				for range 2 {
					o := testOptions(clk)
					o.Leases, o.Cards, o.MinLease = leases, cards, -1
					fs = append(fs, newFetcher(t, o))
				}
				url := ag.url("/.well-known/agent-card.json" + "?" + tc.name[:5])
				var obs Observation
				for i, body := range tc.seq {
					ag.set(body, "", "no-cache")
					clk.Advance(time.Second)
					var err error
					if obs, err = fs[i%2].Observe(context.Background(), url, false); err != nil {
						t.Fatal(err)
					}
				}
				if got := obs.Replicas.Disagree(clk.Now(), obs.Window); got != tc.split {
					t.Errorf("split brain = %v, want %v (window %+v)", got, tc.split, obs.Replicas)
				}
				if obs.Window != DefaultConsistencyWindow {
					t.Errorf("Window = %v, want the default %v", obs.Window, DefaultConsistencyWindow)
				}
				lease, _, err := leases.Get(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				if lease.Replicas.Since != obs.Replicas.Since || len(lease.Replicas.Seen) != 2 {
					t.Errorf("lease window %+v, observation's %+v", lease.Replicas, obs.Replicas)
				}
				if tc.split {
					// Marked once, by whichever worker; an episode that is
					// not the lease's is left alone.
					if err := fs[1].MarkInconsistent(context.Background(), url, lease.Replicas.Since.Add(time.Second)); err != nil {
						t.Fatal(err)
					}
					if err := fs[0].MarkInconsistent(context.Background(), url, lease.Replicas.Since); err != nil {
						t.Fatal(err)
					}
					lease, _, _ = leases.Get(context.Background(), url)
					if !lease.Replicas.Reported {
						t.Errorf("episode not marked reported: %+v", lease.Replicas)
					}
					// A fresh lease serves the window without fetching.
					o := testOptions(clk)
					o.Leases, o.Cards = leases, cards
					hit, err := newFetcher(t, o).Observe(context.Background(), url, false)
					if err != nil || !hit.Replicas.Reported {
						t.Errorf("observation from the lease = %+v, %v", hit.Replicas, err)
					}
				}
				if tc.name == "rolling deploy" && !lease.ChangedAt.Equal(clk.Now().Add(-2*time.Second)) {
					t.Errorf("ChangedAt = %v, want the first fetch of B (%v)", lease.ChangedAt, clk.Now().Add(-2*time.Second))
				}
			})
		}
	})
}
