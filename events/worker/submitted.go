package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/observation"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// submitted pins a task: the core makes the pin (the client's card, else the
// client's digest checked against a fetch, else the first fetch); this shell
// observes the live card when the core needs it and writes the pin. A pin
// that already exists is replaced (the client re-planned and submitted
// again), unless it comes from a later submission.
func (w *Worker) submitted(ctx context.Context, ev events.Event, d events.Submitted, dl delivery) (string, error) {
	s, err := task.Submit(ev, d, w.meta(ev, dl))
	if err != nil {
		return "", permanentError{reason: ReasonInvalidCard, err: err}
	}
	if p := s.Pin(); p.Requirements.ExtendedCard && !w.fetch.HasCredentials(cmp.Or(p.CardURL, p.AgentURL)) {
		s.WithoutCredentials() // a client's extended card: the public card instead
	}
	if !s.NeedsObservation() {
		// The client's card: the pin records who signed it, verified with
		// the keys live cards of that agent are verified with.
		p := s.Pin()
		s.UseExtended(w.clientExtended(p))
		s.ClientSignatures(w.fetch.VerifyAt(ctx, cmp.Or(p.CardURL, p.AgentURL), s.ClientCard()))
		return w.carryOut(ctx, s.Pinned(), 0, dl)
	}
	pin := s.Pin()
	var obsp *task.Observation
	var fail *task.Failure
	obs, ext, err := w.observeCard(ctx, pin, false)
	if err == nil && s.Recheck(observation.Of(obs, w.opts.Now())) {
		// The lease may predate the card the client planned against.
		obs, ext, err = w.observeCard(ctx, pin, true)
	}
	s.UseExtended(ext)
	if err != nil {
		f, ferr := failure(ctx, err)
		if ferr != nil {
			return "", ferr
		}
		fail = &f
	} else {
		w.reportInconsistent(ctx, pin.AgentURL, obs)
		o := observation.Of(obs, w.opts.Now())
		obsp = &o
	}
	var body *detector.Card
	if digest := s.NeedsBody(obsp); digest != "" {
		if body, err = w.pinnedCard(ctx, digest); err != nil {
			return "", err
		}
	}
	return w.carryOut(ctx, s.Observed(obsp, fail, body), 0, dl)
}

// errStaleSubmission: a redelivered submission older than the one that made
// the task's current pin; it must not replace the newer plan.
var errStaleSubmission = errors.New("submission older than the current pin")

// putPin creates the task's pin or replaces an existing one (unless the core
// says the existing one must stay: task.Replaces).
func (w *Worker) putPin(ctx context.Context, pin task.Pin) (uint64, error) {
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
		if !task.Replaces(existing, pin) {
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
