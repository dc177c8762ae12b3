package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Story sums up one task of a timeline: which card it was planned against,
// which card was live when it failed, and what changed in between.
type Story struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	// Requirements are those of the task's last submission before Moment
	// (nil if the submission is not in the timeline).
	Requirements *detector.Requirements `json:"requirements,omitempty"`
	// Planned is the digest of the card the task was planned against at
	// Moment: the pinned side of the verdict, else the task's last pin.
	// PinSource says how the pin was made (client-card, client-digest,
	// first-fetch) and PinnedAt when.
	Planned   string `json:"planned,omitempty"`
	PinSource string `json:"pinSource,omitempty"`
	// PinExtended is the pin's card.pinned extended state, for a task that
	// uses the extended card: "pinned" (Planned is the extended card) or
	// "unavailable" (the public card).
	PinExtended string    `json:"pinExtended,omitempty"`
	PinnedAt    time.Time `json:"pinnedAt,omitzero"`
	// Moment is the decisive event: the first abort verdict; else the first
	// failed or rejected status or schema-class error; else the first
	// re-plan verdict; else the last verdict. Nil when the task met none.
	Moment *Moment `json:"moment,omitempty"`
	// Live is the card the agent served at Moment (the verdict's live card,
	// else the last observation at or before it, else the first one after),
	// or at the end of the timeline without a Moment; LiveAt when it was
	// fetched.
	Live   string    `json:"live,omitempty"`
	LiveAt time.Time `json:"liveAt,omitzero"`
	// Change is what changed from Planned to Live (nil when they are equal
	// or one is unknown).
	Change *Change `json:"change,omitempty"`
	// Verdicts counts the task's verdicts by action.
	Verdicts VerdictCounts `json:"verdicts"`
	// State is the last status the client reported ("" if none).
	State string `json:"state,omitempty"`
}

// Moment is the decisive event of a Story.
type Moment struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	// Action is the verdict's action ("" for a lifecycle event).
	Action detector.Action `json:"action,omitempty"`
	// What says what happened, in words.
	What string `json:"what"`
}

// VerdictCounts counts a task's verdicts by action (detector.Counts, the
// one type of it).
type VerdictCounts = detector.Counts

// stories builds the story of every task in es (sorted entries), by task id.
func (r *Reader) stories(ctx context.Context, es []Entry) ([]Story, error) {
	byTask := map[string][]int{}
	for i, e := range es {
		if e.TaskID != "" {
			byTask[e.TaskID] = append(byTask[e.TaskID], i)
		}
	}
	var out []Story
	for _, id := range sortedKeysOf(byTask) {
		s, err := r.story(ctx, es, byTask[id])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func sortedKeysOf[V any](m map[string]V) []string {
	set := make(map[string]bool, len(m))
	for k := range m {
		set[k] = true
	}
	return sortedKeys(set)
}

// failing reports whether a lifecycle event shows the task failing.
func failing(d events.Data) (string, bool) {
	switch d := d.(type) {
	case events.Status:
		if st, _ := detector.NormalizeState(d.State); st == detector.StateFailed || st == detector.StateRejected {
			return "status " + d.State, true
		}
	case events.Error:
		if detector.IsSchemaClassError(d.Code) {
			return fmt.Sprintf("error %d %s on %s: %s", d.Code, detector.ErrorName(d.Code), d.Method, d.Message), true
		}
	}
	return "", false
}

func (r *Reader) story(ctx context.Context, es []Entry, idx []int) (Story, error) {
	first := es[idx[0]]
	s := Story{TaskID: first.TaskID, AgentURL: first.AgentURL}
	var abort, fail, replan, lastVerdict = -1, -1, -1, -1
	for _, i := range idx {
		e := &es[i]
		if s.AgentURL == "" {
			s.AgentURL = e.AgentURL
		}
		switch d := e.Data.(type) {
		case events.Drift:
			lastVerdict = i
			s.Verdicts.Add(d.Verdict.Action)
			switch d.Verdict.Action {
			case detector.Abort:
				if abort < 0 {
					abort = i
				}
			case detector.Replan:
				if replan < 0 {
					replan = i
				}
			}
		case events.Status:
			s.State = d.State
		}
		if _, ok := failing(e.Data); ok && fail < 0 {
			fail = i
		}
	}
	moment := -1
	switch {
	case abort >= 0:
		moment = abort
	case fail >= 0:
		moment = fail
	case replan >= 0:
		moment = replan
	default:
		moment = lastVerdict
	}
	end := len(es) - 1
	if moment >= 0 {
		end = moment
	}
	// The task's pin and requirements as they stood at the moment.
	for _, i := range idx {
		if i > end {
			break
		}
		switch d := es[i].Data.(type) {
		case events.Pinned:
			s.Planned, s.PinSource, s.PinExtended, s.PinnedAt = d.Digest, d.Source, d.Extended, es[i].Time
		case events.Submitted:
			req := d.Requirements()
			if req.Posture == "" {
				req.Posture = detector.FailClosed
			}
			s.Requirements = &req
		}
	}
	if moment >= 0 {
		e := es[moment]
		s.Moment = &Moment{Time: e.Time, Type: e.Type}
		if d, ok := e.Data.(events.Drift); ok {
			s.Moment.Action = d.Verdict.Action
			s.Moment.What = verdictText(d.Verdict, false)
			s.Planned = d.Pinned.Digest
			s.Live, s.LiveAt = d.Live.Digest, d.Live.FetchedAt.UTC()
		} else {
			s.Moment.What, _ = failing(e.Data)
		}
	}
	if s.Live == "" {
		s.Live, s.LiveAt = liveAt(es, s.AgentURL, end, moment >= 0)
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

// liveAt returns the digest and time of the agent's last observation at or
// before es[end]; with after, failing that, the first one after it.
func liveAt(es []Entry, agentURL string, end int, after bool) (string, time.Time) {
	key := agentKey(agentURL)
	for i := end; i >= 0; i-- {
		if es[i].Kind == KindObservation && agentKey(es[i].AgentURL) == key {
			return es[i].Digests.Live, es[i].Time
		}
	}
	if after {
		for i := end + 1; i < len(es); i++ {
			if es[i].Kind == KindObservation && agentKey(es[i].AgentURL) == key {
				return es[i].Digests.Live, es[i].Time
			}
		}
	}
	return "", time.Time{}
}
