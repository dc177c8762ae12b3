package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// Verdict is one card.drift as a planner acts on it.
type Verdict struct {
	TaskID, AgentURL, CardURL string
	Action                    detector.Action
	Posture                   detector.Posture
	Reason                    string
	// ReplanSkill is the renamed skill's new id, for a replan under degrade.
	ReplanSkill string
	Findings    []detector.Finding // as the worker sorted them
	// Impacting are the findings that touch this task with warning severity
	// or more, Impact the highest of them. ImpactExact is unset when touches
	// were unknown (pre-v1.1) and Options.Pins and Cards could not recompute
	// them: then Impacting is nil and Impact what the action implies, so a
	// MinSeverity filter never drops a verdict that might reach it.
	Impacting    []detector.Finding
	Impact       detector.Severity
	ImpactExact  bool
	Pinned, Live events.CardRef
	Trigger      events.Trigger

	// EventID, Source and Time are the card.drift's CloudEvents attributes.
	EventID, Source string
	Time            time.Time
	Delivery        uint64 // deliveries to this durable, from 1
	Sequence        uint64 // in the events stream

	touchesKnown bool // every finding carried touches (events.Drift.TouchesKnown)
}

// newVerdict builds a Verdict from a decoded card.drift.
func newVerdict(ev events.Event, d events.Drift) Verdict {
	return Verdict{
		TaskID: d.TaskID, AgentURL: d.AgentURL, CardURL: d.CardURL,
		Action: d.Verdict.Action, Posture: d.Verdict.Posture, Reason: d.Verdict.Reason,
		ReplanSkill: d.Verdict.ReplanSkill,
		Findings:    d.Findings,
		Pinned:      d.Pinned, Live: d.Live, Trigger: d.Trigger,
		EventID: ev.ID, Source: ev.Source, Time: ev.Time,
		touchesKnown: d.TouchesKnown,
	}
}

func impliedImpact(v *Verdict) detector.Severity {
	switch v.Action {
	case detector.Abort, detector.Replan:
		return detector.Breaking
	}
	for _, f := range v.Findings {
		if f.Severity >= detector.Warning {
			return detector.Warning
		}
	}
	return 0
}

// resolveImpact fills Impacting, Impact and ImpactExact. Only store
// failures (not absence) are returned, so that the message is retried.
func resolveImpact(ctx context.Context, v *Verdict, pins store.Pins[task.Pin], cards store.Cards) error {
	if v.touchesKnown {
		var impacting []detector.Finding
		var impact detector.Severity
		for _, f := range v.Findings {
			if f.Touches && f.Severity >= detector.Warning {
				impacting = append(impacting, f)
				impact = max(impact, f.Severity)
			}
		}
		// Touches that contradict the action (an event not made by a
		// worker) are not trusted.
		if impact == detector.Breaking || v.Action == detector.Continue {
			v.Impacting, v.Impact, v.ImpactExact = impacting, impact, true
			return nil
		}
	}
	v.Impact = impliedImpact(v)
	if pins == nil || cards == nil {
		return nil
	}
	pin, _, err := pins.Get(ctx, v.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("planner: pin of task %q: %w", v.TaskID, err)
	}
	pinned, err := cardBody(ctx, cards, v.Pinned.Digest)
	if err != nil || pinned == nil {
		return err
	}
	live, err := cardBody(ctx, cards, v.Live.Digest)
	if err != nil || live == nil {
		return err
	}
	jv := detector.Judge(v.Findings, pinned, live, pin.Requirements, cmp.Or(v.Posture, pin.Requirements.Posture))
	v.Impacting, v.Impact, v.ImpactExact = jv.Impacting, 0, true
	for _, f := range jv.Impacting {
		v.Impact = max(v.Impact, f.Severity)
	}
	return nil
}

// cardBody returns the parsed body stored under digest, nil when it is not
// stored (or does not parse: nothing exact can be said then).
func cardBody(ctx context.Context, cards store.Cards, digest string) (*detector.Card, error) {
	raw, err := cards.Get(ctx, digest)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidDigest):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("planner: card %s: %w", digest, err)
	}
	c, err := detector.Parse(raw)
	if err != nil {
		return nil, nil
	}
	return c, nil
}
