package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/observation"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// delivery is where an event sits in the lifecycle stream: its stream
// sequence, how often it was delivered and when it was stored. Zero values
// mean unknown (the event did not come from JetStream).
type delivery struct {
	subject   string // as stored
	seq       uint64
	delivered uint64
	stored    time.Time
	later     *later // the publishes its acknowledgement waits for (nil: none waits)
}

// meta is the core's view of where and when ev was delivered.
func (w *Worker) meta(ev events.Event, dl delivery) task.Meta {
	now := w.opts.Now()
	m := task.Meta{Seq: dl.seq, Time: ev.Time, Now: now, Policy: task.Policy{RequireSigned: w.opts.RequireSignedCards, Diffs: w.diffs}}
	if m.Time.IsZero() {
		m.Time = now
	}
	return m
}

// handle dispatches one decoded event and returns its outcome. The
// decisions are the task core's (events/task); this shell reads the pin and
// the pinned body, observes the live card when the core asks, and carries out
// the core's Result.
func (w *Worker) handle(ctx context.Context, ev events.Event, dl delivery) (string, error) {
	ctx = withTrace(ctx, ev)
	switch d := ev.Data.(type) {
	case events.Submitted:
		return w.submitted(ctx, ev, d, dl)
	case events.Request, events.Status, events.Artifact, events.Error:
		return w.transition(ctx, ev, dl)
	}
	// Outbound types on the inbound stream: nothing a worker should act on.
	return "", permanentError{reason: ReasonUnexpectedType, err: fmt.Errorf("event type %s is not a lifecycle event", ev.Type)}
}

// transition handles a capability-dependent transition of a task: the core
// judges it against the task's pin and the live card.
func (w *Worker) transition(ctx context.Context, ev events.Event, dl delivery) (string, error) {
	taskID := ev.TaskID()
	pin, rev, err := w.opts.Pins.Get(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) {
		if w.awaitsSubmission(ctx, dl) {
			// Waits grow as redeliveries' do: a submission that the store
			// refuses is redelivered with a growing delay too.
			return "", waitError{delay: max(w.cfg.AckWait/3, growingDelay(dl.delivered))}
		}
		return task.OutcomeNoPin, nil
	}
	if err != nil {
		return "", transient(fmt.Errorf("get pin: %w", err))
	}
	var pinned *detector.Card
	if !pin.Pending() {
		if pinned, err = w.pinnedCard(ctx, pin.Digest); err != nil {
			return "", err
		}
	}
	t := task.Begin(ev, w.meta(ev, dl), pin, pinned)
	if t == nil {
		return task.OutcomeNoFetch, nil
	}
	obs, ext, err := w.observeCard(ctx, pin, t.Force)
	var seen task.Observation // the core's view of obs, made once
	if err == nil {
		seen = observation.Of(obs, w.opts.Now())
		if again, why := t.Recheck(seen); again {
			w.log.Debug().Str("task", taskID).Str("why", why).Msg("revalidating before judging")
			if obs, ext, err = w.observeCard(ctx, pin, true); err == nil {
				seen = observation.Of(obs, w.opts.Now())
			}
		}
	}
	t.UseExtended(ext)
	var res task.Result
	if err != nil {
		f, ferr := failure(ctx, err)
		if ferr != nil {
			return "", ferr
		}
		res = t.Fail(f)
	} else {
		w.reportInconsistent(ctx, pin.AgentURL, obs)
		res = t.Judge(seen)
	}
	return w.carryOut(ctx, res, rev, dl)
}

// reportInconsistent publishes card.inconsistent for a split-brain episode
// the observation's window shows and nobody reported yet, then marks it
// reported on the shared lease. Its id is the episode's (events.MsgID), so
// workers that publish it at once, or again after a crash before the mark,
// publish one event. Best effort: a failure is logged, and the next
// observation of the agent tries again; the task's event is not failed.
func (w *Worker) reportInconsistent(ctx context.Context, agentURL string, o fetcher.Observation) {
	r, now := o.Replicas, w.opts.Now()
	if r.Reported || r.Since.IsZero() || !r.Disagree(now, o.Window) {
		return
	}
	d := events.Inconsistent{AgentURL: agentURL, CardURL: o.CardURL, Window: events.Duration(o.Window), Episode: r.Since}
	for _, s := range r.Window(now, o.Window) {
		d.Digests = append(d.Digests, events.DigestSeen{Digest: s.Digest, Count: s.Count, FirstSeen: s.FirstSeen.UTC(), LastSeen: s.LastSeen.UTC()})
	}
	if err := w.publish(ctx, d, ""); err != nil {
		return
	}
	w.log.Info().Str("agent", agentURL).Int("digests", len(d.Digests)).Time("since", r.Since).Msg("card.inconsistent: replicas disagree")
	if err := w.fetch.MarkInconsistent(ctx, o.CardURL, r.Since); err != nil {
		w.log.Warn().Err(err).Str("agent", agentURL).Msg("could not record the published card.inconsistent on the lease")
	}
}

// failure turns a failed observation into the core's Failure, or into an
// error the event is retried for: shutting down, out of time, a lease or
// card store failure — none of which says anything about the agent.
func failure(ctx context.Context, err error) (task.Failure, error) {
	if ctx.Err() != nil || errors.Is(err, fetcher.ErrStore) {
		return task.Failure{}, transient(err)
	}
	// The fetcher reports every failure to reach an agent as a *FetchError;
	// anything else failed on the way there.
	f := task.Failure{Reason: string(fetcher.ReasonConnect), Detail: err.Error()}
	var fe *fetcher.FetchError
	if errors.As(err, &fe) {
		if fe.Reason == fetcher.ReasonCanceled {
			return task.Failure{}, transient(err)
		}
		f.Reason, f.CardURL = string(fe.Reason), fe.URL
	}
	return f, nil
}

// carryOut does what a Result says, in its order: store the card body,
// write the pin first (submissions: create or replace), publish, then update
// the pin (transitions, compare-and-set at rev).
//
// Publishes that nothing after them depends on (no pin update follows) are
// published asynchronously when dl.later collects them: the event's
// acknowledgement waits for their PubAcks (acknowledge), not the task's
// next event. A publish followed by a pin update is waited for first, so
// that a pin never records a drift the stream does not hold.
func (w *Worker) carryOut(ctx context.Context, res task.Result, rev uint64, dl delivery) (string, error) {
	if b := res.StoreCard; b != nil {
		if err := w.opts.Cards.Put(ctx, b.Digest, b.Raw); err != nil {
			return "", transient(fmt.Errorf("store card: %w", err))
		}
		w.cards.put(b.Digest, b.Card)
	}
	if res.Pin != nil && res.PinFirst {
		if rev == 0 {
			if _, err := w.putPin(ctx, *res.Pin); err != nil {
				if errors.Is(err, errStaleSubmission) {
					return task.OutcomeStale, nil
				}
				return "", err
			}
		} else if err := w.savePin(ctx, *res.Pin, rev); err != nil {
			return "", err
		}
	}
	for _, d := range res.Publish {
		taskID := events.Event{Data: d}.TaskID()
		if d, ok := d.(events.Drift); ok {
			for _, f := range d.Findings {
				w.m.drift(f.Rule, string(d.Verdict.Action))
			}
			w.log.Info().Str("task", d.TaskID).Str("agent", d.AgentURL).Str("action", string(d.Verdict.Action)).
				Str("reason", d.Verdict.Reason).Msg("card.drift")
		}
		if dl.later != nil && (res.Pin == nil || res.PinFirst) {
			if err := w.publishLater(ctx, d, taskID, dl.later); err != nil {
				return "", err
			}
			continue
		}
		if err := w.publish(ctx, d, taskID); err != nil {
			return "", err
		}
	}
	if res.Pin != nil && !res.PinFirst {
		if err := w.savePin(ctx, *res.Pin, rev); err != nil {
			if res.Outcome != task.OutcomeDrift || errors.Is(err, errPinChanged) {
				// A pin that changed meanwhile is re-read and the event
				// judged again (its drift, if still due, publishes as a
				// duplicate of this one and is recorded then).
				return "", err
			}
			// The drift is published; failing to record it only means a
			// later transition may publish it again (and the stream's dedup
			// window drops it if it is recent).
			w.log.Warn().Err(err).Str("task", res.Pin.TaskID).Msg("could not record the published drift in the pin")
		}
	}
	return res.Outcome, nil
}

// errPinChanged: the pin was written (or removed) by someone else between
// the read the event was judged on and the write of its result, another
// event of the task handled meanwhile (possible across a partition
// hand-over, or by a worker that lost its partition). What the event
// recorded would be lost: it is handled again on the new pin.
var errPinChanged = errors.New("pin changed since it was read")

// savePin writes pin back with compare-and-set at rev. A conflict (or a pin
// removed meanwhile) is never success: it returns a transient errPinChanged,
// so that process re-reads the pin and applies the event again (a few times
// in process, then by redelivery).
func (w *Worker) savePin(ctx context.Context, pin task.Pin, rev uint64) error {
	_, err := w.opts.Pins.Update(ctx, pin, rev)
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return transient(fmt.Errorf("update pin of task %q at revision %d: %w: %w", pin.TaskID, rev, errPinChanged, err))
	case err != nil:
		return transient(fmt.Errorf("update pin: %w", err))
	}
	return nil
}

// pinnedCard returns the parsed body of a pinned digest, nil if carddrift
// never stored it.
func (w *Worker) pinnedCard(ctx context.Context, digest string) (*detector.Card, error) {
	if c, ok := w.cards.get(digest); ok {
		return c, nil
	}
	raw, err := w.opts.Cards.Get(ctx, digest)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, transient(fmt.Errorf("get card %s: %w", digest, err))
	}
	c, err := detector.Parse(raw)
	if err != nil {
		// A stored body always parsed when it was stored: this is corruption.
		return nil, permanentError{reason: ReasonCorruptCard, err: err}
	}
	w.cards.put(digest, c)
	return c, nil
}

// agentOf returns scheme://host of a card URL.
func agentOf(cardURL string) string {
	u, err := url.Parse(cardURL)
	if err != nil || u.Host == "" {
		return cardURL
	}
	return u.Scheme + "://" + u.Host
}

// awaitsSubmission reports whether a transition whose task has no pin
// waits for its submission: within noPinGrace of being stored, and after it
// while the lifecycle stream holds the task's submission before it (one that
// the pins store refuses for longer, or that waits for redelivery behind a
// growing delay, still makes the pin). A lookup that fails waits too; the
// wait is bounded by MaxDeliver (awaitPin).
func (w *Worker) awaitsSubmission(ctx context.Context, dl delivery) bool {
	if dl.stored.IsZero() || w.opts.Now().Sub(dl.stored) < w.noPinGrace() {
		return !dl.stored.IsZero()
	}
	prefix := strings.TrimSuffix(w.cfg.LifecycleSubjects, ">")
	rest, ok := strings.CutPrefix(dl.subject, prefix)
	dot := strings.IndexByte(rest, '.')
	if !ok || dot < 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s := w.lifecycle.Load()
	if s == nil {
		got, err := w.js.Stream(ctx, w.cfg.LifecycleStream)
		if err != nil {
			return true
		}
		w.lifecycle.Store(&got)
		s = &got
	}
	m, err := (*s).GetLastMsgForSubject(ctx, prefix+"submitted"+rest[dot:])
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	}
	return err != nil || m.Sequence < dl.seq
}

// noPinGrace is how long after it was stored an event of a task with no pin
// waits for the task's submission: long enough for a submission held by a
// worker that died to be redelivered (AckWait) to a worker that holds the
// partition (PinnedTTL), twice over.
func (w *Worker) noPinGrace() time.Duration {
	return 2*w.cfg.AckWait + w.opts.PinnedTTL
}
