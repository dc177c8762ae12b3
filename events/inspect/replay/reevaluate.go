package replay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
)

// Reevaluation is what Reader.Reevaluate changes.
type Reevaluation struct {
	// Posture, if set, replaces every task's own posture.
	Posture detector.Posture
	// Rules, if set, filters and re-grades the findings before the verdict.
	Rules *detector.RuleSet
}

// Report is the outcome of a re-evaluation.
type Report struct {
	Query   Query             `json:"query"`
	Posture detector.Posture  `json:"posture,omitempty"`
	Rules   *detector.RuleSet `json:"rules,omitempty"`
	// Evaluated counts the recorded verdicts re-evaluated; Differences are
	// those whose action differs, by time, task and trigger.
	Evaluated   int              `json:"evaluated"`
	Differences []Difference     `json:"differences"`
	Skipped     []SkippedVerdict `json:"skipped,omitempty"`
}

// Difference is a recorded verdict that would be different.
type Difference struct {
	Time     time.Time      `json:"time"`
	TaskID   string         `json:"taskId"`
	AgentURL string         `json:"agentUrl"`
	Trigger  events.Trigger `json:"trigger"`
	Pinned   string         `json:"pinned"`
	Live     string         `json:"live"`
	// SkillID and Idempotent are the task's, from its submission.
	SkillID    string `json:"skillId,omitempty"`
	Idempotent bool   `json:"idempotent"`
	// Old is the verdict carddrift emitted, New the re-evaluated one.
	Old detector.Verdict `json:"old"`
	New detector.Verdict `json:"new"`
	// Findings are the re-evaluated findings (after Rules).
	Findings []detector.Finding `json:"findings"`
}

// SkippedVerdict is a recorded verdict Reevaluate could not re-run.
type SkippedVerdict struct {
	Time    time.Time `json:"time"`
	TaskID  string    `json:"taskId"`
	EventID string    `json:"eventId"`
	Reason  string    `json:"reason"`
}

// Reevaluate judges every card.drift q selects again (Rejudge) and reports
// the verdicts whose action would change.
func (r *Reader) Reevaluate(ctx context.Context, q Query, re Reevaluation) (*Report, error) {
	judged, skipped, err := r.Rejudge(ctx, q, re)
	if err != nil {
		return nil, err
	}
	rep := &Report{Query: q, Posture: re.Posture, Rules: re.Rules, Differences: []Difference{}, Skipped: skipped}
	for _, j := range judged {
		rep.Evaluated++
		d := j.Recorded
		if j.Verdict.Action == d.Verdict.Action {
			continue
		}
		rep.Differences = append(rep.Differences, Difference{
			Time: j.Time, TaskID: d.TaskID, AgentURL: d.AgentURL, Trigger: d.Trigger,
			Pinned: d.Pinned.Digest, Live: d.Live.Digest, SkillID: j.Requirements.SkillID, Idempotent: j.Requirements.Idempotent,
			Old: d.Verdict, New: j.Verdict, Findings: j.Findings,
		})
	}
	slices.SortStableFunc(rep.Differences, func(a, b Difference) int {
		return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.TaskID, b.TaskID), strings.Compare(a.Trigger.EventID, b.Trigger.EventID))
	})
	return rep, nil
}

// Rejudged is one recorded verdict judged again (Reader.Rejudge).
type Rejudged struct {
	// Time and EventID are the recorded card.drift's, Recorded its data.
	Time     time.Time
	EventID  string
	Recorded events.Drift
	// Requirements are the task's, from its submission (with the defaults).
	Requirements detector.Requirements
	// Findings and Verdict are the worker's decision (task.Decide) on the
	// recorded pin, bodies and signers, with the Reevaluation's posture and
	// rules.
	Findings []detector.Finding
	Verdict  detector.Verdict
}

// Rejudge judges every card.drift q selects again, on the recorded card
// bodies (never fetched), with re's posture and rules, and returns every
// verdict it could judge, in timeline order, with those it could not.
func (r *Reader) Rejudge(ctx context.Context, q Query, re Reevaluation) ([]Rejudged, []SkippedVerdict, error) {
	if re.Posture != "" {
		if _, err := detector.ParsePosture(string(re.Posture)); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidQuery, err)
		}
	}
	if err := q.validate(); err != nil {
		return nil, nil, err
	}
	drifts, subs, err := r.verdicts(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	var judged []Rejudged
	var skipped []SkippedVerdict
	for _, e := range drifts {
		d := e.Data.(events.Drift)
		skip := func(reason string) {
			skipped = append(skipped, SkippedVerdict{Time: e.Time, TaskID: d.TaskID, EventID: e.ID, Reason: reason})
		}
		sub, ok := submissionAt(subs[d.TaskID], e)
		if !ok {
			skip("no recorded a2a.task.submitted for the task: its requirements are unknown")
			continue
		}
		req := sub.Requirements() // with the defaults: fail-closed unless the client said degrade
		live, err := r.body(ctx, d.Live.Digest)
		if err != nil {
			return nil, nil, err
		}
		if live.card == nil {
			skip("the live card " + d.Live.Digest + " was not recorded")
			continue
		}
		pinned, err := r.body(ctx, d.Pinned.Digest)
		if err != nil {
			return nil, nil, err
		}
		pinnedCard := pinned.card
		if slices.ContainsFunc(d.Findings, func(f detector.Finding) bool { return f.Rule == detector.RulePinnedCardUnknown }) {
			// The worker judged without the pinned body (pinned-card-unknown
			// is its finding exactly then); a body stored since is not
			// what it judged.
			pinnedCard = nil
		}
		pin, obs := recorded(d, req, live.card)
		var taskFindings []detector.Finding
		for _, f := range d.Findings {
			// The task-level findings, as recorded: history keeps no other
			// trace of what made them (but pinned-card-unknown, which the
			// core makes again from the digests).
			if rule, ok := detector.RuleByID(f.Rule); ok && rule.TaskLevel && f.Rule != detector.RulePinnedCardUnknown {
				taskFindings = append(taskFindings, f)
			}
		}
		dec := task.Decide(pin, pinnedCard, obs, taskFindings, task.Policy{Posture: re.Posture, Rules: re.Rules})
		judged = append(judged, Rejudged{Time: e.Time, EventID: e.ID, Recorded: d, Requirements: req,
			Findings: dec.Findings, Verdict: dec.Verdict})
	}
	return judged, skipped, nil
}

// verdicts reads the card.drift entries q selects and, by task id, their
// tasks' submissions up to q.Until.
func (r *Reader) verdicts(ctx context.Context, q Query) ([]Entry, map[string][]Entry, error) {
	key, _ := q.agentKey()
	w := r.window(q, r.opts.Latency)
	life, card, err := r.views(ctx)
	if err != nil {
		return nil, nil, err
	}
	agent, task := "*", "*"
	if key != "" {
		agent = key
	}
	if q.TaskID != "" {
		task = events.Token(q.TaskID)
	}
	recs, _, err := r.read(ctx, card, []string{cardPrefix + "drift." + agent + "." + task}, w, nil)
	if err != nil {
		return nil, nil, err
	}
	var drifts []Entry
	need := map[string]bool{}
	for _, rec := range recs {
		if e := entryOf(rec); e.Kind == KindVerdict && q.inWindow(e.Time) {
			drifts = append(drifts, e)
			need[e.TaskID] = true
		}
	}
	sortEntries(drifts)
	subs := map[string][]Entry{}
	if len(drifts) == 0 {
		return drifts, subs, nil
	}
	// The submissions of the drifts' tasks, by subject when they are few
	// (an agent's, a window's), else the whole submitted subject.
	if toks := taskTokens(recs); len(toks) <= 16*filterBatch {
		recs, _, err = r.readTasks(ctx, life, "submitted", toks, Range{To: w.To}, nil)
	} else {
		recs, _, err = r.read(ctx, life, []string{r.lifecycleFilter(life, "submitted", task)}, Range{To: w.To}, nil)
	}
	if err != nil {
		return nil, nil, err
	}
	var all []Entry
	for _, rec := range recs {
		if need[rec.ev.TaskID()] {
			all = append(all, entryOf(rec))
		}
	}
	sortEntries(all)
	for _, e := range all {
		subs[e.TaskID] = append(subs[e.TaskID], e)
	}
	return drifts, subs, nil
}

// submissionAt returns the task's last submission at or before e (the one
// its pin came from), else its first.
func submissionAt(subs []Entry, e Entry) (events.Submitted, bool) {
	var best *Entry
	for i := range subs {
		if subs[i].Time.After(e.Time) {
			break
		}
		best = &subs[i]
	}
	if best == nil {
		if len(subs) == 0 {
			return events.Submitted{}, false
		}
		best = &subs[0]
	}
	s, ok := best.Data.(events.Submitted)
	return s, ok
}

// recorded returns the pin and the live observation a card.drift was judged
// on. A digest does not cover signatures, so the body stored under one may
// be another signing: the recorded signers are what the signature rules
// compared (with none recorded, the bodies say what they say).
func recorded(d events.Drift, req detector.Requirements, liveBody *detector.Card) (task.Pin, task.Observation) {
	p := task.Pin{TaskID: d.TaskID, AgentURL: d.AgentURL, Digest: d.Pinned.Digest, Requirements: req}
	obs := task.Observation{CardURL: d.CardURL, Digest: d.Live.Digest, Card: liveBody}
	if d.Pinned.Signer == nil && d.Live.Signer == nil {
		return p, obs
	}
	p.SignaturesKnown = true
	if s := d.Pinned.Signer; s != nil {
		p.Signatures = []detector.Signature{*s}
	}
	c := *liveBody // the worker judged it signed by the recorded signer (nil: unsigned)
	c.HasSignatures, c.Signatures = d.Live.Signer != nil, nil
	if s := d.Live.Signer; s != nil {
		c.Signatures = []detector.Signature{*s}
	}
	obs.Card = &c
	return p, obs
}
