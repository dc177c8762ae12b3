package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/events"
)

// Version is one card version of an agent, as its events recorded it.
type Version struct {
	Digest string `json:"digest"`
	// CardVersion is the card's own "version" field, from the recorded body
	// ("" when the body was never stored).
	CardVersion string `json:"cardVersion,omitempty"`
	// Recorded is true when the Cards store holds the body.
	Recorded bool `json:"recorded"`
	// FirstSeen and LastSeen are the times of the first and last event that
	// named the digest.
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
	// Observed, Pinned and Drift count the card.observed, card.pinned and
	// card.drift events (either side) that named it.
	Observed int `json:"observed"`
	Pinned   int `json:"pinned"`
	Drift    int `json:"drift"`
	// Change is the changelog from the previous version (by first sight);
	// nil for the first.
	Change *Change `json:"change,omitempty"`
}

// CardHistory is every card version of one agent.
type CardHistory struct {
	AgentURL string    `json:"agentUrl"`
	Versions []Version `json:"versions"`
	Skipped  []Skipped `json:"skipped,omitempty"`
}

// Cards returns every digest the agent's card events name within q's window
// (q.TaskID keeps only that task's pins and verdicts), in order of first
// sight, and the changelog between consecutive versions.
func (r *Reader) Cards(ctx context.Context, agentURL string, q Query) (*CardHistory, error) {
	q.AgentURL = agentURL
	if agentURL == "" {
		return nil, fmt.Errorf("%w: card history needs an agent URL", ErrInvalidQuery)
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	key, _ := q.agentKey()
	card, err := r.view(ctx, r.opts.Config.EventsStream)
	if err != nil {
		return nil, err
	}
	filters := []string{
		cardPrefix + "observed." + key,
		cardPrefix + "pinned." + key + ".*",
		cardPrefix + "drift." + key + ".*",
	}
	recs, skipped, err := r.read(ctx, card, filters, r.window(q, r.opts.FetchLatency), nil)
	if err != nil {
		return nil, err
	}
	byDigest := map[string]*Version{}
	seen := func(digest string, t time.Time) *Version {
		v := byDigest[digest]
		if v == nil {
			v = &Version{Digest: digest, FirstSeen: t, LastSeen: t}
			byDigest[digest] = v
		}
		if t.Before(v.FirstSeen) {
			v.FirstSeen = t
		}
		if t.After(v.LastSeen) {
			v.LastSeen = t
		}
		return v
	}
	for _, rec := range recs {
		e := entryOf(rec)
		if !q.inWindow(e.Time) || (q.TaskID != "" && e.TaskID != "" && e.TaskID != q.TaskID) {
			continue
		}
		switch d := e.Data.(type) {
		case events.Observed:
			if d.Digest != "" {
				seen(d.Digest, e.Time).Observed++
			}
		case events.Pinned:
			seen(d.Digest, e.Time).Pinned++
		case events.Drift:
			seen(d.Pinned.Digest, e.Time).Drift++
			if d.Live.Digest != d.Pinned.Digest {
				seen(d.Live.Digest, e.Time).Drift++
			}
		}
	}
	h := &CardHistory{AgentURL: agentURL, Skipped: skipped, Versions: []Version{}}
	for _, v := range byDigest {
		h.Versions = append(h.Versions, *v)
	}
	slices.SortFunc(h.Versions, func(a, b Version) int {
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		return strings.Compare(a.Digest, b.Digest)
	})
	for i := range h.Versions {
		v := &h.Versions[i]
		b, err := r.body(ctx, v.Digest)
		if err != nil {
			return nil, err
		}
		v.Recorded = !b.missing
		if b.card != nil {
			v.CardVersion = b.card.Version
		}
		if i > 0 {
			if v.Change, err = r.change(ctx, h.Versions[i-1].Digest, v.Digest); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}
