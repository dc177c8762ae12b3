package replay

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Kind classifies a timeline entry.
type Kind string

// Kinds of entries: the event types they stand for.
const (
	KindLifecycle    Kind = "lifecycle"    // a2a.task.*
	KindPin          Kind = "pin"          // card.pinned
	KindObservation  Kind = "observation"  // card.observed
	KindVerdict      Kind = "verdict"      // card.drift
	KindUnreachable  Kind = "unreachable"  // card.unreachable (never drift)
	KindInconsistent Kind = "inconsistent" // card.inconsistent (split brain)
)

// Digests are the card digests an entry names: Pinned the card a task was
// planned against (card.pinned, a card.drift's pinned side, a submitted
// card or cardDigest), Live the card an agent served.
type Digests struct {
	Pinned string `json:"pinned,omitempty"`
	Live   string `json:"live,omitempty"`
}

// Change is what changed between two recorded card versions: the findings of
// detector.Diff(From, To) over the bodies in the Cards store.
type Change struct {
	From     string             `json:"from"`
	To       string             `json:"to"`
	Findings []detector.Finding `json:"findings"`
	// Missing lists the digests whose body carddrift never stored; Findings
	// is empty then. Error says why a stored body did not parse.
	Missing []string `json:"missing,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Entry is one event of a timeline.
type Entry struct {
	// Time is the CloudEvents time (for an observation, the fetch's), else
	// when it was stored.
	Time     time.Time   `json:"time"`
	Kind     Kind        `json:"kind"`
	Type     string      `json:"type"`
	TaskID   string      `json:"taskId"`
	AgentURL string      `json:"agentUrl"`
	Digests  Digests     `json:"digests,omitzero"`
	Data     events.Data `json:"data"`
	// Change, when the entry shows a new card version, is what changed.
	Change *Change   `json:"change,omitempty"`
	ID     string    `json:"id"`
	Source string    `json:"source"`
	Stream string    `json:"stream"`
	Seq    uint64    `json:"seq"`
	Stored time.Time `json:"stored"`

	part string // the lifecycle partition ("" when none, or a card event)
}

// Timeline is the history a Query selected, in order.
type Timeline struct {
	Query   Query     `json:"query"`
	Entries []Entry   `json:"entries"`
	Stories []Story   `json:"stories"` // by task id
	Skipped []Skipped `json:"skipped,omitempty"`
	// Read counts the messages the query read (the answer is Entries).
	Read int `json:"read"`
	// Omitted counts the entries Capped left out; Rest names the command
	// that gives them all.
	Omitted int    `json:"omitted,omitempty"`
	Rest    string `json:"rest,omitempty"`
}

// Tasks returns the task ids of the timeline, sorted.
func (tl *Timeline) Tasks() []string {
	return tl.distinct(func(e Entry) string { return e.TaskID })
}

// Agents returns the agent URLs of the timeline, sorted.
func (tl *Timeline) Agents() []string {
	return tl.distinct(func(e Entry) string { return e.AgentURL })
}

// distinct returns the non-empty values of field, sorted, each once.
func (tl *Timeline) distinct(field func(Entry) string) []string {
	var out []string
	for _, e := range tl.Entries {
		if v := field(e); v != "" {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// collect reads the records of a task query (its subjects, then its agents'
// agent-level ones) or an agent query (its card subjects, which name its
// tasks, then their lifecycle subjects).
func (r *Reader) collect(ctx context.Context, q Query, read *int) ([]record, []Skipped, error) {
	key, _ := q.agentKey()
	lw, cw := r.window(q, r.opts.Latency), r.window(q, r.opts.FetchLatency)
	life, card, err := r.views(ctx)
	if err != nil {
		return nil, nil, err
	}

	var lrecs, crecs []record
	var skipped, cskipped []Skipped
	switch {
	case q.TaskID != "":
		tok := events.Token(q.TaskID)
		if lrecs, skipped, err = r.read(ctx, life, []string{r.lifecycleFilter(life, "*", tok)}, lw, read); err != nil {
			return nil, nil, err
		}
		if key != "" {
			lrecs = slices.DeleteFunc(lrecs, func(rec record) bool { return agentKey(rec.ev.AgentURL()) != key })
		}
		agents := map[string]bool{}
		taskFilter := cardPrefix + "*.*." + tok
		if key != "" {
			agents[key] = true
			taskFilter = cardPrefix + "*." + key + "." + tok
		}
		for _, rec := range lrecs {
			if k := agentKey(rec.ev.AgentURL()); k != "" {
				agents[k] = true
			}
		}
		// The task's own card events (any agent), then its agents'
		// agent-level events (observations) over the whole history: the
		// card live when the task began may have been observed long before.
		if crecs, cskipped, err = r.read(ctx, card, []string{taskFilter}, Range{To: cw.To}, read); err != nil {
			return nil, nil, err
		}
		for _, rec := range crecs {
			if k := agentKey(rec.ev.AgentURL()); k != "" && key == "" {
				agents[k] = true
			}
		}
		var af []string
		for _, k := range slices.Sorted(maps.Keys(agents)) {
			af = append(af, cardPrefix+"*."+k)
		}
		if len(af) > 0 {
			arecs, askipped, err := r.read(ctx, card, af, Range{To: cw.To}, read)
			if err != nil {
				return nil, nil, err
			}
			crecs, cskipped = append(crecs, arecs...), append(cskipped, askipped...)
		}
	case key != "":
		// The agent's card events, from a look-back before the window (a
		// task of the window may have been pinned before it opened): their
		// subjects name the agent's tasks.
		dw := cw
		if !dw.From.IsZero() {
			dw.From = dw.From.Add(-r.opts.LookBack)
		}
		if crecs, cskipped, err = r.read(ctx, card, []string{cardPrefix + "*." + key, cardPrefix + "*." + key + ".*"}, dw, read); err != nil {
			return nil, nil, err
		}
		if lrecs, skipped, err = r.readTasks(ctx, life, "*", taskTokens(crecs), lw, read); err != nil {
			return nil, nil, err
		}
		lrecs = slices.DeleteFunc(lrecs, func(rec record) bool { return agentKey(rec.ev.AgentURL()) != key })
	}
	return append(lrecs, crecs...), append(skipped, cskipped...), nil
}

// taskTokens returns the task tokens of card event records, sorted.
func taskTokens(recs []record) []string {
	toks := map[string]bool{}
	for _, rec := range recs {
		if tok := taskToken(rec.subject); tok != "" {
			toks[tok] = true
		}
	}
	return slices.Sorted(maps.Keys(toks))
}

// agentKey returns events.AgentKey of a URL, "" if it has none.
func agentKey(u string) string {
	k, err := events.AgentKey(u)
	if err != nil {
		return ""
	}
	return k
}

// entryOf makes the timeline entry of a record.
func entryOf(rec record) Entry {
	ev := rec.ev
	e := Entry{
		Time: ev.Time, Type: ev.Type, TaskID: ev.TaskID(), AgentURL: ev.AgentURL(), Data: ev.Data,
		ID: ev.ID, Source: ev.Source, Stream: rec.stream, Seq: rec.seq, Stored: rec.stored, part: rec.part,
	}
	if e.Time.IsZero() {
		e.Time = rec.stored
	}
	switch d := ev.Data.(type) {
	case events.Submitted:
		e.Kind = KindLifecycle
		switch {
		case d.CardDigest != "":
			e.Digests.Pinned = d.CardDigest
		case len(d.Card) > 0:
			if dg, err := detector.Digest(d.Card); err == nil {
				e.Digests.Pinned = dg
			}
		}
	case events.Pinned:
		e.Kind = KindPin
		e.Digests.Pinned = d.Digest
	case events.Observed:
		e.Kind = KindObservation
		e.Digests.Live = d.Digest
		if !d.FetchedAt.IsZero() {
			e.Time = d.FetchedAt
		}
	case events.Drift:
		e.Kind = KindVerdict
		e.Digests = Digests{Pinned: d.Pinned.Digest, Live: d.Live.Digest}
	case events.Unreachable:
		e.Kind = KindUnreachable
	case events.Inconsistent:
		e.Kind = KindInconsistent
	default:
		e.Kind = KindLifecycle
	}
	e.Time = e.Time.UTC()
	return e
}

// streamRank puts lifecycle events before card events stored at the same
// time.
func streamRank(e *Entry) int {
	if e.Kind == KindLifecycle {
		return 0
	}
	return 1
}

func sortEntries(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int { return compareEntries(&a, &b) })
}

// compareEntries orders entries by time, stored time, stream (lifecycle
// first) and sequence.
func compareEntries(a, b *Entry) int {
	return cmp.Or(
		a.Time.Compare(b.Time),
		a.Stored.Compare(b.Stored),
		cmp.Compare(streamRank(a), streamRank(b)),
		strings.Compare(a.Stream, b.Stream),
		cmp.Compare(a.Seq, b.Seq),
	)
}

// taskSpan keeps, of a task's entries sorted by time, the task's own entries,
// the agent-level entries between its first and last, and for each agent the
// last observation before the task began (the card live when it started).
func taskSpan(es []Entry) []Entry {
	var first, last time.Time
	for _, e := range es {
		if e.TaskID == "" {
			continue
		}
		if first.IsZero() || e.Time.Before(first) {
			first = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	if first.IsZero() {
		return es[:0]
	}
	before := map[string]int{} // agent key → index of its last observation before first
	for i, e := range es {
		if e.TaskID == "" && e.Kind == KindObservation && e.Time.Before(first) {
			before[agentKey(e.AgentURL)] = i
		}
	}
	keep := map[int]bool{}
	for _, i := range before {
		keep[i] = true
	}
	out := es[:0]
	for i, e := range es {
		if e.TaskID != "" || keep[i] || (!e.Time.Before(first) && !e.Time.After(last)) {
			out = append(out, e)
		}
	}
	return out
}
