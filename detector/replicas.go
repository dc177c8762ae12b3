package detector

import (
	"slices"
	"time"
)

// Split brain: replicas behind one agent URL that serve different cards at
// once. The fetcher keeps a window of the digests its fetches saw on each
// agent's lease (Replicas); deciding on it (Disagree, CheckReplicas) is pure
// and lives here, the clock passed in.

// Bounds of a Replicas window, whatever its duration: a lease stays small.
const (
	// MaxSightings is how many distinct digests a window keeps (the least
	// recently seen is dropped first).
	MaxSightings = 4
	// MaxReturns is how many returns a window keeps (the oldest first).
	MaxReturns = 4
	// SplitBrainReturns is how many returns within the window make split brain.
	// A return is an observation of a digest the window holds right after one of
	// another: A→B→A is a change and its revert, A→B→A→B an alternation.
	SplitBrainReturns = 2
)

// Sighting is one card digest an agent served within the window: how many
// fetches (200 or 304) saw it, first and last.
type Sighting struct {
	Digest    string    `json:"digest"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
}

// Replicas is the window of an agent's recent live digests: what split
// brain is decided on. The zero value is an empty window.
type Replicas struct {
	// Seen are the digests seen within the window, in order of first
	// sight; at most MaxSightings.
	Seen []Sighting `json:"seen,omitempty"`
	// Last is the digest of the latest observation.
	Last string `json:"last,omitempty"`
	// Returns are when the live digest came back to one the window held
	// after another (A→B→A), oldest first; at most MaxReturns.
	Returns []time.Time `json:"returns,omitempty"`
	// Since is when the current split-brain episode began (the observation
	// that made Disagree true); zero when there is none. An episode is
	// identified by the agent's card URL and Since.
	Since time.Time `json:"since,omitzero"`
	// Reported is set once card.inconsistent was published for the
	// episode.
	Reported bool `json:"reported,omitempty"`
}

// Observe records that a fetch at time at saw digest, forgets what is older
// than window, and starts or ends the episode: Since is set by the
// observation that makes Disagree true, and cleared (with Reported) by one
// that makes it false. r is not changed.
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

// prune returns a copy of r without what was seen before now-window.
func (r Replicas) prune(now time.Time, window time.Duration) Replicas {
	r.Seen, r.Returns = r.Window(now, window), recent(r.Returns, now.Add(-window))
	return r
}

// recent returns the times of ts from from on.
func recent(ts []time.Time, from time.Time) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.Before(from) {
			out = append(out, t)
		}
	}
	return out
}

// Disagree reports split brain at now: at least SplitBrainReturns returns
// within window, between digests the window still holds.
func (r Replicas) Disagree(now time.Time, window time.Duration) bool {
	return len(recent(r.Returns, now.Add(-window))) >= SplitBrainReturns && len(r.Window(now, window)) >= 2
}

// Window returns the digests seen within window at now, in order of first
// sight.
func (r Replicas) Window(now time.Time, window time.Duration) []Sighting {
	from := now.Add(-window)
	seen := make([]Sighting, 0, len(r.Seen)) // never nil, as before
	for _, s := range r.Seen {
		if !s.LastSeen.Before(from) {
			seen = append(seen, s)
		}
	}
	return seen
}
