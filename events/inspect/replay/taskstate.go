package replay

import (
	"context"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// taskState is an open task of a stream: what its story needs, kept as it
// goes, and no more. It holds no event: every string it keeps is the
// stream's own (strs), and of a verdict only the two card versions.
type taskState struct {
	id, agentURL, state string // the story's TaskID, AgentURL, State
	verdicts            VerdictCounts
	agent               string    // key
	last                time.Time // of its latest entry
	endedAt             time.Time // its terminal status, zero while it runs
	// Its lifecycle events' partition, the latest's sequence and the
	// latest few by id (a card event names its trigger), for the workers'
	// progress; caught is when the workers were seen past the latest.
	part    string
	lastSeq uint64
	evs     []evRef
	caught  time.Time
	// at is what the task stands on now, the candidate moments what it
	// stood on at each (Story.Moment).
	at                          standing
	abort, fail, replan, verdct *standing
}

// standing is a task's pin, requirements and its agent's last observed card
// at one of its entries, with the entry when it is a candidate moment.
type standing struct {
	planned, pinSource string
	pinExtended        string // card.pinned extended: pinned, unavailable, or empty
	pinnedAt           time.Time
	hasPin             bool
	req                *detector.Requirements
	live               string
	liveAt             time.Time
	moment             *Moment
	drift              *driftCards
	needsLive          bool // no observation before it: the first one after
}

type evRef struct{ id, seq uint64 }

// maxEvRefs bounds the lifecycle events a task keeps for its triggers: a
// worker's card event answers one of a task's latest.
const maxEvRefs = 8

// lifecycle takes the task's lifecycle entry e, whose id hashes to id.
func (ts *taskState) lifecycle(e *Entry, id uint64, strs *strs) {
	if len(ts.evs) == maxEvRefs {
		ts.evs = append(ts.evs[:0], ts.evs[1:]...)
	}
	ts.evs = append(ts.evs, evRef{id: id, seq: e.Seq})
	ts.part, ts.lastSeq, ts.caught = strs.own(e.part), e.Seq, time.Time{}
}

func (ts *taskState) triggerSeq(id uint64) (uint64, bool) {
	for _, r := range ts.evs {
		if r.id == id {
			return r.seq, true
		}
	}
	return 0, false
}

// trigger returns the id of the lifecycle event a worker's card event
// answers ("" for an agent-level one).
func trigger(d events.Data) string {
	switch d := d.(type) {
	case events.Drift:
		return d.Trigger.EventID
	case events.Pinned:
		return d.Trigger.EventID
	case events.Unreachable:
		return d.Trigger.EventID
	}
	return ""
}

// driftCards are the card versions a verdict judged.
type driftCards struct {
	pinned, live string
	liveAt       time.Time
}

// add takes one of the task's own entries.
func (ts *taskState) add(e *Entry, obs *Entry, strs *strs) {
	if ts.agentURL == "" {
		ts.agentURL = strs.own(e.AgentURL)
	}
	ts.last = e.Time
	if obs != nil {
		ts.at.live, ts.at.liveAt = strs.own(obs.Digests.Live), obs.Time
	}
	switch d := e.Data.(type) {
	case events.Pinned:
		ts.at.planned, ts.at.pinSource, ts.at.pinExtended, ts.at.pinnedAt, ts.at.hasPin = strs.own(d.Digest), strs.own(d.Source), strs.own(d.Extended), e.Time, true
	case events.Submitted:
		req := strs.requirements(d.Requirements())
		if req.Posture == "" {
			req.Posture = detector.FailClosed
		}
		ts.at.req = &req
	case events.Status:
		ts.state = strs.own(d.State)
		if st, _ := detector.NormalizeState(d.State); st.Terminal() {
			ts.endedAt = e.Time
		}
	}
	mark := func() *standing {
		st := ts.at
		st.moment = &Moment{Time: e.Time, Type: strs.own(e.Type)}
		st.needsLive = st.live == ""
		if d, ok := e.Data.(events.Drift); ok {
			st.drift = &driftCards{pinned: strs.own(d.Pinned.Digest), live: strs.own(d.Live.Digest), liveAt: d.Live.FetchedAt.UTC()}
			st.moment.Action = d.Verdict.Action
			st.moment.What = verdictText(d.Verdict, false)
		} else {
			st.moment.What, _ = failing(e.Data)
		}
		return &st
	}
	if d, ok := e.Data.(events.Drift); ok {
		ts.verdicts.Add(d.Verdict.Action)
		switch d.Verdict.Action {
		case detector.Abort:
			if ts.abort == nil {
				ts.abort = mark()
			}
		case detector.Replan:
			if ts.replan == nil {
				ts.replan = mark()
			}
		}
		ts.verdct = mark()
	}
	if _, ok := failing(e.Data); ok && ts.fail == nil {
		ts.fail = mark()
	}
}

// observed takes an observation of the task's agent.
func (ts *taskState) observed(e *Entry, strs *strs) {
	live := strs.own(e.Digests.Live)
	ts.at.live, ts.at.liveAt = live, e.Time
	for _, st := range []*standing{ts.abort, ts.fail, ts.replan, ts.verdct} {
		if st != nil && st.needsLive {
			st.live, st.liveAt, st.needsLive = live, e.Time, false
		}
	}
}

// story is the task's story as it stands.
func (ts *taskState) story(ctx context.Context, r *Reader) (Story, error) {
	s := Story{TaskID: ts.id, AgentURL: ts.agentURL, State: ts.state, Verdicts: ts.verdicts}
	st := &ts.at
	for _, m := range []*standing{ts.abort, ts.fail, ts.replan, ts.verdct} {
		if m != nil {
			st = m
			break
		}
	}
	s.Requirements = st.req
	if st.hasPin {
		s.Planned, s.PinSource, s.PinExtended, s.PinnedAt = st.planned, st.pinSource, st.pinExtended, st.pinnedAt
	}
	s.Moment = st.moment
	s.Live, s.LiveAt = st.live, st.liveAt
	if d := st.drift; d != nil {
		s.Planned = d.pinned
		s.Live, s.LiveAt = d.live, d.liveAt
	}
	if s.Planned != "" && s.Live != "" && s.Planned != s.Live {
		c, err := r.change(ctx, s.Planned, s.Live)
		if err != nil {
			return Story{}, err
		}
		s.Change = c
	}
	return s, nil
}

// strs owns the strings a stream keeps: a decoded event's strings share
// the message's bytes, so a kept one would hold the whole message. Those
// that repeat are kept once, up to maxStrs (then it starts over).
type strs struct{ m map[string]string }

const maxStrs = 1 << 14

// own returns s as a string of its own: the one kept, else a copy.
func (t *strs) own(s string) string {
	if s == "" {
		return ""
	}
	if o, ok := t.m[s]; ok {
		return o
	}
	if t.m == nil || len(t.m) >= maxStrs {
		t.m = make(map[string]string)
	}
	o := strings.Clone(s)
	t.m[o] = o
	return o
}

// requirements returns req with strings of its own.
func (t *strs) requirements(req detector.Requirements) detector.Requirements {
	list := func(l []string) []string {
		if l == nil {
			return nil
		}
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = t.own(s)
		}
		return out
	}
	req.SkillID = t.own(req.SkillID)
	req.InputModes, req.OutputModes = list(req.InputModes), list(req.OutputModes)
	req.Security, req.Extensions = list(req.Security), list(req.Extensions)
	if req.Scopes != nil {
		scopes := make(map[string][]string, len(req.Scopes))
		for k, v := range req.Scopes {
			scopes[t.own(k)] = list(v)
		}
		req.Scopes = scopes
	}
	return req
}
