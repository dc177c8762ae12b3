package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store"
)

// submitted pins a task: the client's card, else the client's digest checked
// against a fetch, else the first fetch. A pin that already exists is
// replaced (the client re-planned and submitted again).
func (w *Worker) submitted(ctx context.Context, ev events.Event, d events.Submitted, dl delivery) (string, error) {
	req := d.Requirements() // with the defaults: fail-closed unless the client said degrade
	pin := detector.Pin{
		TaskID: d.TaskID, AgentURL: d.AgentURL, CardURL: d.CardURL,
		PinnedAt: w.eventTime(ev), Requirements: req, SubmittedSeq: dl.seq,
	}
	var obs fetcher.Observation
	var fetchErr error
	fetched := false
	switch {
	case len(d.Card) > 0:
		card, err := detector.Parse(d.Card)
		if err != nil {
			return "", permanentError{reason: "invalid-card", err: fmt.Errorf("the submitted card does not parse: %w", err)}
		}
		digest, err := detector.Digest(d.Card)
		if err != nil {
			return "", permanentError{reason: "invalid-card", err: err}
		}
		if err := w.opts.Cards.Put(ctx, digest, d.Card); err != nil {
			return "", transient(fmt.Errorf("store card: %w", err))
		}
		w.cards.put(digest, card)
		fillPin(&pin, digest, card)
		pin.Source = events.PinClientCard
	case d.CardDigest != "":
		pin.Source = events.PinClientDigest
		pin.Digest = d.CardDigest
		obs, fetchErr = w.fetch.ObserveAgent(ctx, d.AgentURL, d.CardURL, false)
		if fetchErr == nil && obs.Digest != d.CardDigest && obs.FromLease && obs.FetchedAt.Before(pin.PinnedAt) {
			// The client may have read a newer card than the lease holds.
			obs, fetchErr = w.fetch.ObserveAgent(ctx, d.AgentURL, d.CardURL, true)
		}
		fetched = fetchErr == nil
		switch {
		case fetched && obs.Digest == d.CardDigest:
			fillPin(&pin, obs.Digest, obs.Card)
			pin.CardURL, pin.ETag = obs.CardURL, obs.ETag
		default:
			// The client planned against another card than the live one (or
			// the agent is unreachable): keep its digest, and its body if
			// carddrift ever stored it.
			card, err := w.pinnedCard(ctx, d.CardDigest)
			if err != nil {
				return "", err
			}
			if card != nil {
				fillPin(&pin, d.CardDigest, card)
			}
			if fetched {
				pin.CardURL = obs.CardURL
			}
		}
	default:
		pin.Source = events.PinFirstFetch
		obs, fetchErr = w.observeFresh(ctx, d.AgentURL, d.CardURL, pin.PinnedAt)
		fetched = fetchErr == nil
		if fetched {
			fillPin(&pin, obs.Digest, obs.Card)
			pin.CardURL, pin.ETag = obs.CardURL, obs.ETag
		}
	}

	rev, err := w.putPin(ctx, pin)
	if errors.Is(err, errStaleSubmission) {
		return outcomeStale, nil
	}
	if err != nil {
		return "", err
	}
	if fetchErr != nil {
		// Pending pin or unverified digest: say why, then stop.
		if _, err := w.unreachable(ctx, ev, d.AgentURL, d.CardURL, d.TaskID, fetchErr); err != nil {
			return "", err
		}
		if pin.Digest == "" {
			return outcomeUnreachable, nil
		}
	}
	if pin.Digest != "" {
		if err := w.publishPinned(ctx, ev, pin); err != nil {
			return "", err
		}
	}
	if fetched && pin.Source == events.PinClientDigest && obs.Digest != pin.Digest {
		t := &task{pin: pin, rev: rev}
		if t.pinned, err = w.pinnedCard(ctx, pin.Digest); err != nil {
			return "", err
		}
		return w.evaluate(ctx, ev, t, obs)
	}
	return outcomePinned, nil
}

// completePin fills a pending pin (whose first fetch failed) from the first
// successful observation.
func (w *Worker) completePin(ctx context.Context, ev events.Event, t *task, obs fetcher.Observation) (string, error) {
	fillPin(&t.pin, obs.Digest, obs.Card)
	t.pin.CardURL, t.pin.ETag = obs.CardURL, obs.ETag
	t.pinDirty = true
	if err := w.savePin(ctx, t); err != nil {
		return "", err
	}
	if err := w.publishPinned(ctx, ev, t.pin); err != nil {
		return "", err
	}
	return outcomePinned, nil
}

func fillPin(pin *detector.Pin, digest string, c *detector.Card) {
	pin.Digest = digest
	pin.Fingerprint = detector.Fingerprint(c)
	pin.StructuralDigest = detector.StructuralDigest(c)
	pin.CardVersion = c.Version
	if vs := c.ProtocolVersions(); len(vs) > 0 {
		pin.ProtocolVersion = vs[0]
	}
}

// errStaleSubmission: a redelivered submission older than the one that made
// the task's current pin; it must not replace the newer plan.
var errStaleSubmission = errors.New("submission older than the current pin")

// putPin creates the task's pin or replaces an existing one (unless the
// existing one comes from a later submission).
func (w *Worker) putPin(ctx context.Context, pin detector.Pin) (uint64, error) {
	for range 5 {
		rev, err := w.opts.Pins.Create(ctx, pin)
		if err == nil {
			return rev, nil
		}
		if !errors.Is(err, store.ErrExists) {
			return 0, transient(fmt.Errorf("create pin: %w", err))
		}
		existing, cur, err := w.opts.Pins.Get(ctx, pin.TaskID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, transient(fmt.Errorf("get pin: %w", err))
		}
		if pin.SubmittedSeq != 0 && existing.SubmittedSeq > pin.SubmittedSeq {
			return 0, errStaleSubmission
		}
		rev, err = w.opts.Pins.Update(ctx, pin, cur)
		if err == nil {
			return rev, nil
		}
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			return 0, transient(fmt.Errorf("replace pin: %w", err))
		}
	}
	return 0, transient(fmt.Errorf("pin of task %q keeps changing under this worker", pin.TaskID))
}

func (w *Worker) publishPinned(ctx context.Context, ev events.Event, pin detector.Pin) error {
	return w.publish(ctx, events.Pinned{
		TaskID: pin.TaskID, AgentURL: pin.AgentURL, CardURL: pin.CardURL,
		Digest: pin.Digest, Fingerprint: pin.Fingerprint, Source: pin.Source,
		Trigger: events.Trigger{EventID: ev.ID, Type: ev.Type, Source: ev.Source},
	}, pin.TaskID)
}

// observeFresh observes the live card for a first-fetch pin: the shared lease
// when it was fetched after the submission, else a new fetch (coalesced with
// every other one for the card). A pin made from an observation older than
// the client's own discovery would attribute a change the client already
// planned against to drift.
func (w *Worker) observeFresh(ctx context.Context, agentURL, cardURL string, submitted time.Time) (fetcher.Observation, error) {
	obs, err := w.fetch.ObserveAgent(ctx, agentURL, cardURL, false)
	if err != nil || !obs.FromLease || !obs.FetchedAt.Before(submitted) {
		return obs, err
	}
	return w.fetch.ObserveAgent(ctx, agentURL, cardURL, true)
}
