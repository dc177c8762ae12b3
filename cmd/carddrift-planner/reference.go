package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// What the reference planner did about a verdict (the "did" of a line).
const (
	didCancel      = "cancel"              // abort: the task is canceled
	didResubmit    = "resubmit"            // replan: a2a.task.submitted with the live card
	didAlreadyDone = "already-replanned"   // replan: the pin already is the live card
	didCannotAbort = "cannot-replan-abort" // replan impossible: canceled instead
	didContinue    = "continue"
	didDryRun      = "dry-run"
)

// errLimit NAKs verdicts that arrive after --limit, for the next run.
var errLimit = errors.New("limit reached")

// reference is the planner's Handler, called for one verdict at a time.
type reference struct {
	checker *planner.Checker
	emitter *client.Emitter
	pins    store.Pins[task.Pin]
	out     io.Writer
	json    bool
	dryRun  bool
	log     zerolog.Logger

	limit, handled int
	done           func() // called once limit verdicts were handled
}

// outcome is one line of output.
type outcome struct {
	Time        time.Time       `json:"time"`
	TaskID      string          `json:"taskId"`
	AgentURL    string          `json:"agentUrl"`
	Action      detector.Action `json:"action"`
	Did         string          `json:"did"`
	Reason      string          `json:"reason"`
	Rules       []string        `json:"rules"`
	Pinned      string          `json:"pinned"`
	Live        string          `json:"live"`
	Resubmitted string          `json:"resubmitted,omitempty"`
	Skill       string          `json:"skill,omitempty"`
}

func (p *reference) handle(ctx context.Context, v planner.Verdict) error {
	if p.limit > 0 && p.handled >= p.limit {
		return errLimit
	}
	o := outcome{
		Time: time.Now().UTC(), TaskID: v.TaskID, AgentURL: v.AgentURL, Action: v.Action, Reason: v.Reason,
		Rules: detector.RuleIDs(v.Findings), Pinned: v.Pinned.Digest, Live: v.Live.Digest,
	}
	var err error
	switch v.Action {
	case detector.Abort:
		o.Did = didCancel
	case detector.Replan:
		err = p.replan(ctx, v, &o)
	default:
		o.Did = didContinue
	}
	if err != nil {
		// Transient: the verdict is NAKed and comes back.
		p.log.Warn().Err(err).Str("task", v.TaskID).Uint64("delivery", v.Delivery).Msg("re-plan failed; will retry")
		return err
	}
	if p.dryRun && o.Did != didContinue {
		o.Reason = "(" + didDryRun + ") " + o.Reason
	}
	p.print(o)
	if p.handled++; p.handled == p.limit {
		p.done()
	}
	return nil
}

// replan re-reads the card and re-submits the task against it, or aborts
// when the live card no longer satisfies the task.
func (p *reference) replan(ctx context.Context, v planner.Verdict, o *outcome) error {
	pin, _, err := p.pins.Get(ctx, v.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		o.Did, o.Reason = didCannotAbort, "no pin for the task (expired or never submitted): nothing to re-plan from; "+v.Reason
		return nil
	}
	if err != nil {
		return err
	}
	req := pin.Requirements
	if v.ReplanSkill != "" {
		// The agent renamed the task's skill: re-plan onto the new id.
		req.SkillID, o.Skill = v.ReplanSkill, v.ReplanSkill
	}
	d, err := p.checker.Check(ctx, req, pin.AgentURL, planner.WithCardURL(pin.CardURL))
	var ue *planner.UnreachableError
	switch {
	case errors.As(err, &ue):
		o.Did, o.Reason = didCannotAbort, fmt.Sprintf("live card unreachable (%s): cannot re-plan; %s", ue.Reason, v.Reason)
		return nil
	case err != nil:
		return err
	}
	o.Live = d.Live.Digest
	if d.Extended == events.ExtendedUnavailable {
		o.Did, o.Reason = didCannotAbort, "the task uses the extended card, which cannot be read (no --agent-credentials for its origin): cannot re-plan; "+v.Reason
		return nil
	}
	if !d.Satisfied() {
		msgs := make([]string, 0, len(d.Unmet))
		for _, u := range d.Unmet {
			msgs = append(msgs, u.Message)
		}
		o.Did, o.Reason = didCannotAbort, "the live card no longer satisfies the task: "+strings.Join(msgs, "; ")
		return nil
	}
	o.Resubmitted = d.Live.Digest
	if pin.Digest == d.Live.Digest {
		o.Did = didAlreadyDone // an earlier delivery re-planned it
		return nil
	}
	o.Did = didResubmit
	if p.dryRun {
		return nil
	}
	return p.emitter.Submitted(ctx, events.Submitted{
		TaskID: pin.TaskID, AgentURL: pin.AgentURL, CardURL: pin.CardURL, SkillID: req.SkillID,
		Requires: events.Requires{
			Streaming: req.Streaming, PushNotifications: req.PushNotifications,
			InputModes: req.InputModes, OutputModes: req.OutputModes, Security: req.Security,
			Scopes: req.Scopes, Extensions: req.Extensions, ExtendedCard: req.ExtendedCard,
		},
		Posture: req.Posture, Idempotent: req.Idempotent,
		Card: d.Card.Raw,
	})
}

func (p *reference) print(o outcome) {
	if p.json {
		b, err := json.Marshal(o)
		if err == nil {
			fmt.Fprintf(p.out, "%s\n", b)
		}
		return
	}
	line := fmt.Sprintf("%s  %-8s task=%s agent=%s  %s", o.Time.Format(time.RFC3339), strings.ToUpper(string(o.Action)), o.TaskID, o.AgentURL, o.Did)
	if o.Resubmitted != "" && o.Did == didResubmit {
		line += " against " + short(o.Resubmitted) + " (was " + short(o.Pinned) + ")"
		if o.Skill != "" {
			line += fmt.Sprintf(" onto skill %q", o.Skill)
		}
	}
	fmt.Fprintf(p.out, "%s  [%s]  %s\n", line, strings.Join(o.Rules, ","), o.Reason)
}

func short(d string) string { return d[:min(len(d), 19)] }
