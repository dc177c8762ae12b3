package replay

import (
	"container/heap"
	"context"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/events"
)

// Item is one element of a streamed timeline: an entry, or the story of a
// task (exactly one of the two is set).
type Item struct {
	Entry *Entry
	Story *Story
}

// Summary is what a streamed query answered and what it cost.
type Summary struct {
	Query Query `json:"query"`
	// Entries, Tasks and Agents count the answer's entries, the tasks they
	// name (one story each) and the agents.
	Entries int `json:"entries"`
	Tasks   int `json:"tasks"`
	Agents  int `json:"agents"`
	// Read is how many messages the query read from the streams.
	Read int `json:"read"`
	// Late counts the entries that came after their task's story was
	// written (a worker's card event later than Stream waits for): they
	// are in the answer, not in the story.
	Late int `json:"late,omitempty"`
	// Skipped are the stored messages that did not decode (the first
	// maxSkipped; SkippedCount counts them all).
	Skipped      []Skipped `json:"skipped,omitempty"`
	SkippedCount int       `json:"skippedCount,omitempty"`
}

// maxSkipped bounds the undecodable messages a Summary lists.
const maxSkipped = 100

func (s *Summary) skip(sk ...Skipped) {
	for _, k := range sk {
		s.SkippedCount++
		if len(s.Skipped) < maxSkipped {
			s.Skipped = append(s.Skipped, k)
		}
	}
}

// settle is how long (in event time) a terminal task stays open once the
// workers are past its last lifecycle event: a worker may still be fetching
// the card (fetcher.DefaultTotalTimeout).
const settle = 10 * time.Second

// idleTask is how long (in event time) a task the workers are not seen past
// stays open without an event.
const idleTask = 5 * time.Minute

// Stream hands emit every entry q selects, in timeline order, and every
// task's story, as it reads, without holding them. emit's error ends it.
func (r *Reader) Stream(ctx context.Context, q Query, emit func(Item) error) (*Summary, error) {
	return r.stream(ctx, q, true, emit)
}

// stream is Stream; without interleave, a window's or the whole history's
// stories come at the end, each task's from all its entries.
func (r *Reader) stream(ctx context.Context, q Query, interleave bool, emit func(Item) error) (*Summary, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	sum := &Summary{Query: q}
	p := &proc{r: r, q: q, emit: emit, sum: sum, pins: map[string]string{}, live: map[string]Entry{},
		seedPins: map[string]Entry{}, tasks: map[string]*taskState{}, open: map[string]map[string]bool{}, agents: map[string]bool{},
		front: map[string]uint64{}, seed: maphash.MakeSeed(), closed: map[uint64]string{}}
	if q.TaskID != "" || q.AgentURL != "" {
		recs, skipped, err := r.collect(ctx, q, &sum.Read)
		if err != nil {
			return nil, err
		}
		sum.skip(skipped...)
		entries := make([]Entry, 0, len(recs))
		for _, rec := range recs {
			entries = append(entries, entryOf(rec))
		}
		recs = nil
		sortEntries(entries)
		if q.TaskID != "" {
			entries = taskSpan(entries)
		}
		for i := range entries {
			if err := p.entry(ctx, entries[i]); err != nil {
				return nil, err
			}
		}
	} else {
		p.interleave = interleave
		if err := r.merge(ctx, q, p); err != nil {
			return nil, err
		}
	}
	if err := p.finish(ctx); err != nil {
		return nil, err
	}
	sum.Agents = len(p.agents)
	return sum, nil
}

// merge reads both streams at once, in stored-time order, and feeds p the
// entries in timeline order.
func (r *Reader) merge(ctx context.Context, q Query, p *proc) error {
	life, card, err := r.views(ctx)
	if err != nil {
		return err
	}
	lw, cw := r.window(q, r.opts.Latency), r.window(q, r.opts.FetchLatency)
	if !cw.From.IsZero() {
		// The look-back, read whole: a consumer filtered to the pins and
		// observations costs the server more than it saves.
		cw.From = cw.From.Add(-r.opts.LookBack)
	}
	heads := []*head{{late: r.opts.Latency}, {late: r.opts.FetchLatency}}
	if heads[0].sc, err = r.scan(ctx, life, nil, lw.From, lw.To, &p.sum.Read); err != nil {
		return err
	}
	defer heads[0].sc.close()
	if heads[1].sc, err = r.scan(ctx, card, nil, cw.From, cw.To, &p.sum.Read); err != nil {
		return err
	}
	defer heads[1].sc.close()
	if !q.Since.IsZero() || !q.Until.IsZero() {
		heads[0].sc.wanted, heads[1].sc.wanted = wanted(q, true), wanted(q, false)
	}
	var buf entryHeap
	for {
		for _, h := range heads {
			if err := h.fill(ctx, p.sum); err != nil {
				return err
			}
		}
		// The head stored first goes into the buffer; entries whose time
		// no message still to come can precede leave it.
		var next *head
		for _, h := range heads {
			if h.ok && (next == nil || h.rec.stored.Before(next.rec.stored)) {
				next = h
			}
		}
		if next != nil {
			heap.Push(&buf, entryOf(next.rec))
			next.ok, next.rec = false, record{}
			if err := next.fill(ctx, p.sum); err != nil {
				return err
			}
		}
		var horizon time.Time
		for _, h := range heads {
			if h.ok {
				if t := h.rec.stored.Add(-h.late); horizon.IsZero() || t.Before(horizon) {
					horizon = t
				}
			}
		}
		// With both scans over (next nil), the buffer empties.
		for buf.Len() > 0 && (next == nil || !horizon.IsZero() && buf[0].Time.Before(horizon)) {
			if err := p.entry(ctx, heap.Pop(&buf).(Entry)); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
	}
}

// wanted says from a message's headers whether a window's read can use it:
// not a lifecycle event outside the window, nor a card event after it, nor
// one before it but a pin or an observation. Without headers, it is decoded.
func wanted(q Query, lifecycle bool) func(nats.Header) bool {
	return func(h nats.Header) bool {
		t, err := time.Parse(time.RFC3339Nano, ceHeader(h, "time"))
		if err != nil || t.IsZero() {
			return true // the entry's time is then when it was stored
		}
		if lifecycle {
			return q.inWindow(t)
		}
		switch ceHeader(h, "type") {
		case events.TypePinned:
			return q.Until.IsZero() || !t.After(q.Until)
		case events.TypeDrift, events.TypeUnreachable, events.TypeInconsistent:
			return q.inWindow(t)
		}
		return true
	}
}

// ceHeader returns a binary-mode event's attribute header as
// events.Decode reads it, "" when it is absent, repeated or
// percent-encoded.
func ceHeader(h nats.Header, attr string) string {
	vs := h["ce-"+attr]
	if len(vs) != 1 || strings.IndexByte(vs[0], '%') >= 0 {
		return ""
	}
	return vs[0]
}

// head is a scanner with the record it read next.
type head struct {
	sc   *scanner
	late time.Duration
	rec  record
	ok   bool
}

// fill reads the next record unless one is waiting or the scan is over.
func (h *head) fill(ctx context.Context, sum *Summary) error {
	for !h.ok && !h.sc.done {
		rec, skip, ok, err := h.sc.next(ctx)
		if err != nil {
			return err
		}
		if skip != nil {
			sum.skip(*skip)
			continue
		}
		h.rec, h.ok = rec, ok
	}
	return nil
}

// entryHeap orders entries as sortEntries does.
type entryHeap []Entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return compareEntries(&h[i], &h[j]) < 0 }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(Entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = Entry{}
	*h = old[:len(old)-1]
	return e
}

// proc turns entries in timeline order into the items of a stream, holding
// only the open tasks, each agent's last observation and the tasks' pins.
type proc struct {
	r    *Reader
	q    Query
	emit func(Item) error
	sum  *Summary
	// interleave writes a task's story once it ended (merge), not at the
	// end.
	interleave bool

	pins     map[string]string          // task → pinned digest
	live     map[string]Entry           // agent key → last observation
	seedPins map[string]Entry           // task → its last pin before the window
	tasks    map[string]*taskState      // open tasks
	open     map[string]map[string]bool // agent key → its open tasks
	agents   map[string]bool
	swept    time.Time
	strs     strs // the strings the maps and open tasks keep

	// The workers' progress: the furthest lifecycle event (by partition)
	// a card event read so far answers.
	front map[string]uint64
	// The tasks whose stories were written within idleTask, by the hash
	// of their id (with their last pin), oldest first in ended.
	seed   maphash.Seed
	closed map[uint64]string
	ended  []closedTask
}

// closedTask is a task whose story was written, and when.
type closedTask struct {
	id uint64
	at time.Time
}

func (p *proc) entry(ctx context.Context, e Entry) error {
	key := p.strs.own(agentKey(e.AgentURL))
	if !p.q.Since.IsZero() && e.Time.Before(p.q.Since) {
		// The state the window opens in.
		switch e.Kind {
		case KindPin:
			// Only what a task's story takes of its pin (taskState.add),
			// in strings of its own: the look-back holds many.
			id, d := strings.Clone(e.TaskID), e.Data.(events.Pinned)
			p.pins[id] = p.strs.own(e.Digests.Pinned)
			p.seedPins[id] = Entry{Time: e.Time, Kind: e.Kind, AgentURL: p.strs.own(e.AgentURL),
				Data: events.Pinned{Digest: p.pins[id], Source: p.strs.own(d.Source), Extended: p.strs.own(d.Extended)}}
		case KindObservation:
			p.live[key] = e
		}
		return nil
	}
	if !p.q.inWindow(e.Time) {
		return nil
	}
	var late bool // the entry of a task whose story was written
	var idHash uint64
	if e.TaskID != "" && p.interleave {
		idHash = maphash.String(p.seed, e.TaskID)
		_, late = p.closed[idHash]
		late = late && p.tasks[e.TaskID] == nil
	}
	// The change the entry shows: a verdict's, a pin replacing another of
	// its task, an observation differing from the agent's previous one.
	var from, to string
	switch e.Kind {
	case KindPin:
		to = e.Digests.Pinned
		switch prev, ok := p.pins[e.TaskID]; {
		case late:
			from = p.closed[idHash]
			p.closed[idHash] = p.strs.own(to)
		case ok:
			from = prev
			p.pins[e.TaskID] = p.strs.own(to)
		default:
			p.pins[strings.Clone(e.TaskID)] = p.strs.own(to)
		}
	case KindObservation:
		if prev, ok := p.live[key]; ok {
			from = prev.Digests.Live
		}
		to = e.Digests.Live
		p.live[key] = e
	case KindVerdict:
		from, to = e.Digests.Pinned, e.Digests.Live
	}
	if from != "" && to != "" && from != to {
		c, err := p.r.change(ctx, from, to)
		if err != nil {
			return err
		}
		e.Change = c
	}
	p.sum.Entries++
	if e.AgentURL != "" && !p.agents[e.AgentURL] {
		p.agents[p.strs.own(e.AgentURL)] = true
	}
	if err := p.emit(Item{Entry: &e}); err != nil {
		return err
	}
	switch {
	case late:
		p.sum.Late++
	case e.TaskID != "":
		ts := p.tasks[e.TaskID]
		var obs *Entry
		if ts == nil {
			id := strings.Clone(e.TaskID)
			ts = &taskState{id: id, agent: key}
			if pin, ok := p.seedPins[id]; ok {
				ts.add(&pin, nil, &p.strs)
				delete(p.seedPins, id)
			}
			if o, ok := p.live[key]; ok {
				obs = &o
			}
			p.tasks[id] = ts
			if p.open[key] == nil {
				p.open[key] = map[string]bool{}
			}
			p.open[key][id] = true
		}
		ts.add(&e, obs, &p.strs)
		if !p.interleave {
			break
		}
		if e.Kind == KindLifecycle {
			ts.lifecycle(&e, maphash.String(p.seed, e.ID), &p.strs)
		} else if t := trigger(e.Data); t != "" {
			if seq, ok := ts.triggerSeq(maphash.String(p.seed, t)); ok && seq > p.front[ts.part] {
				p.front[ts.part] = seq
			}
		}
	case e.Kind == KindObservation:
		for id := range p.open[key] {
			p.tasks[id].observed(&e, &p.strs)
		}
	}
	if p.interleave && e.Time.Sub(p.swept) >= time.Second {
		p.swept = e.Time
		return p.sweep(ctx, e.Time)
	}
	return nil
}

// sweep writes the stories of the tasks that are over at now (event time)
// and forgets the stories written idleTask before.
func (p *proc) sweep(ctx context.Context, now time.Time) error {
	var done []string
	for id, ts := range p.tasks {
		if !ts.endedAt.IsZero() && ts.caught.IsZero() && ts.lastSeq > 0 && p.front[ts.part] >= ts.lastSeq {
			ts.caught = now // the workers are past its last lifecycle event
		}
		if (!ts.caught.IsZero() && now.Sub(ts.caught) >= settle+p.r.opts.FetchLatency) || now.Sub(ts.last) >= idleTask {
			done = append(done, id)
		}
	}
	slices.Sort(done)
	for _, id := range done {
		if err := p.close(ctx, id); err != nil {
			return err
		}
		p.ended = append(p.ended, closedTask{id: maphash.String(p.seed, id), at: now})
	}
	n := 0
	for n < len(p.ended) && now.Sub(p.ended[n].at) >= idleTask {
		delete(p.closed, p.ended[n].id)
		n++
	}
	if n > 0 {
		p.ended = append(p.ended[:0], p.ended[n:]...)
	}
	return nil
}

// close writes a task's story and forgets the task.
func (p *proc) close(ctx context.Context, id string) error {
	ts := p.tasks[id]
	delete(p.tasks, id)
	if p.interleave {
		p.closed[maphash.String(p.seed, id)] = p.pins[id]
	}
	delete(p.pins, id)
	if m := p.open[ts.agent]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(p.open, ts.agent)
		}
	}
	s, err := ts.story(ctx, p.r)
	if err != nil {
		return err
	}
	p.sum.Tasks++
	return p.emit(Item{Story: &s})
}

// finish writes the stories of the tasks still open, by task id.
func (p *proc) finish(ctx context.Context) error {
	for _, id := range slices.Sorted(maps.Keys(p.tasks)) {
		if err := p.close(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Timeline reads the history q selects into one timeline, with the changes
// between card versions and a story per task: it holds the whole answer.
func (r *Reader) Timeline(ctx context.Context, q Query) (*Timeline, error) {
	return r.capped(ctx, q, math.MaxInt, false)
}

// Capped reads as Stream does and keeps the first max entries (≤ 0:
// DefaultCap) with their tasks' stories, counting the rest in Omitted.
func (r *Reader) Capped(ctx context.Context, q Query, max int) (*Timeline, error) {
	if max <= 0 {
		max = DefaultCap
	}
	return r.capped(ctx, q, max, true)
}

func (r *Reader) capped(ctx context.Context, q Query, max int, interleave bool) (*Timeline, error) {
	tl := &Timeline{Query: q, Entries: []Entry{}}
	drawn := map[string]bool{}
	sum, err := r.stream(ctx, q, interleave, func(it Item) error {
		switch {
		case it.Entry != nil && len(tl.Entries) < max:
			tl.Entries = append(tl.Entries, *it.Entry)
			if it.Entry.TaskID != "" {
				drawn[it.Entry.TaskID] = true
			}
		case it.Entry != nil:
			tl.Omitted++
		case drawn[it.Story.TaskID]:
			tl.Stories = append(tl.Stories, *it.Story)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(tl.Stories, func(a, b Story) int { return strings.Compare(a.TaskID, b.TaskID) })
	tl.Read, tl.Skipped = sum.Read, sum.Skipped
	return tl, nil
}

// DefaultCap is how many entries Capped keeps by default.
const DefaultCap = 5000
