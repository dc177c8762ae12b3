package detector

import (
	"slices"
	"time"
)

// Bounds of a Replicas window, so that a lease stays small.
const (
	MaxSightings = 4 // distinct digests kept, the least recently seen dropped first
	MaxReturns   = 4 // returns kept, the oldest dropped first
	// SplitBrainReturns is how many returns within the window make split
	// brain. A return is a digest the window holds seen right after another:
	// A→B→A is a change and its revert, A→B→A→B an alternation.
	SplitBrainReturns = 2
)

// Sighting is one digest an agent served within the window: how many
// fetches saw it, first and last.
type Sighting struct {
	Digest    string    `json:"digest"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
}

// Replicas is the window of an agent's recent live digests (kept on its
// lease), what split brain is decided on. The zero value is an empty window.
type Replicas struct {
	Seen    []Sighting  `json:"seen,omitempty"` // in order of first sight
	Last    string      `json:"last,omitempty"` // the latest observation's digest
	Returns []time.Time `json:"returns,omitempty"`
	// Since is when the current split-brain episode began; zero when there
	// is none. An episode is identified by the agent's card URL and Since.
	Since time.Time `json:"since,omitzero"`
	// Reported is set once card.inconsistent was published for the episode.
	Reported bool `json:"reported,omitempty"`
}

// Observe returns r with a fetch at time at that saw digest recorded, what is
// older than window forgotten, and the episode started or ended.
func (r Replicas) Observe(digest string, at time.Time, window time.Duration) Replicas {
	r = r.prune(at, window)
	i := slices.IndexFunc(r.Seen, func(s Sighting) bool { return s.Digest == digest })
	switch {
	case i >= 0:
		if r.Last != "" && r.Last != digest {
			r.Returns = append(r.Returns, at)
			if n := len(r.Returns); n > MaxReturns {
				r.Returns = slices.Clone(r.Returns[n-MaxReturns:])
			}
		}
		r.Seen[i].Count++
		r.Seen[i].LastSeen = at
	default:
		r.Seen = append(r.Seen, Sighting{Digest: digest, Count: 1, FirstSeen: at, LastSeen: at})
		if len(r.Seen) > MaxSightings {
			oldest := 0
			for j, s := range r.Seen {
				if s.LastSeen.Before(r.Seen[oldest].LastSeen) {
					oldest = j
				}
			}
			r.Seen = slices.Delete(r.Seen, oldest, oldest+1)
		}
	}
	r.Last = digest
	switch split := r.Disagree(at, window); {
	case split && r.Since.IsZero():
		r.Since, r.Reported = at, false
	case !split:
		r.Since, r.Reported = time.Time{}, false
	}
	return r
}

func (r Replicas) prune(now time.Time, window time.Duration) Replicas {
	r.Seen, r.Returns = r.Window(now, window), recent(r.Returns, now.Add(-window))
	return r
}

func recent(ts []time.Time, from time.Time) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.Before(from) {
			out = append(out, t)
		}
	}
	return out
}

// Disagree reports split brain at now: SplitBrainReturns returns within
// window, between digests the window still holds.
func (r Replicas) Disagree(now time.Time, window time.Duration) bool {
	return len(recent(r.Returns, now.Add(-window))) >= SplitBrainReturns && len(r.Window(now, window)) >= 2
}

// Window returns the digests seen within window at now; never nil.
func (r Replicas) Window(now time.Time, window time.Duration) []Sighting {
	from := now.Add(-window)
	seen := make([]Sighting, 0, len(r.Seen))
	for _, s := range r.Seen {
		if !s.LastSeen.Before(from) {
			seen = append(seen, s)
		}
	}
	return seen
}

// CheckReplicas returns a replicas-disagree finding when the digests the
// agent served within window hold two or more (Replicas decides when).
func CheckReplicas(digests []string, window time.Duration) (Finding, bool) {
	ds := slices.Clone(digests)
	slices.Sort(ds)
	ds = slices.Compact(ds)
	if len(ds) < 2 {
		return Finding{}, false
	}
	return newFinding(RuleReplicasDisagree, "", Warning, "", nil, ds, "digests", quoteList(ds), "window", window.String()), true
}
