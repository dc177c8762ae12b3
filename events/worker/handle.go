package worker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store"
)

// Outcomes of one event, the "outcome" label of carddrift_events_total.
const (
	outcomeNoFetch     = "no-fetch"    // needed no live card
	outcomeNoPin       = "no-pin"      // the task has no pin
	outcomeUnchanged   = "unchanged"   // live card matches the pin, no task finding
	outcomeDrift       = "drift"       // card.drift published (or already published)
	outcomeUnreachable = "unreachable" // card.unreachable published
	outcomePinned      = "pinned"
	outcomeRetry       = "retry"       // NAKed for redelivery
	outcomeDeadLetter  = "dead-letter" // terminated and copied to the DLQ
	outcomeWaiting     = "waiting"     // no pin yet: NAKed until its submission arrives
	outcomeStale       = "stale"       // a submission older than the task's current pin
)

// delivery is where an event sits in the lifecycle stream: its stream
// sequence, how often it was delivered and when it was stored. Zero values
// mean unknown (the event did not come from JetStream).
type delivery struct {
	seq       uint64
	delivered uint64
	stored    time.Time
}

// waitError asks for the event to be redelivered after delay without counting
// it as a failure: its task has no pin yet, and its submission may still be on
// its way (a redelivery can bring a task's events out of order).
type waitError struct{ delay time.Duration }

func (e waitError) Error() string { return fmt.Sprintf("no pin yet; retry in %s", e.delay) }

// transientError marks a failure worth retrying (store, publish).
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

func transient(err error) error { return transientError{err} }

// permanentError marks an event that can never succeed.
type permanentError struct {
	reason string
	err    error
}

func (e permanentError) Error() string { return e.reason + ": " + e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

const inProcessRetries = 3

// handleMsg handles one message and acknowledges, NAKs or dead-letters it.
// Messages of one partition arrive here one at a time, in stream order.
func (w *Worker) handleMsg(ctx context.Context, msg jetstream.Msg) {
	start := time.Now()
	ev, err := events.Decode(msg)
	if err != nil {
		w.deadLetter(ctx, msg, "malformed", err)
		w.m.event("invalid", outcomeDeadLetter, time.Since(start).Seconds())
		return
	}
	if !needsIO(ev) {
		// The fast path of most lifecycle events: nothing to fetch, store or
		// publish.
		if aerr := msg.Ack(); aerr != nil {
			w.log.Warn().Err(aerr).Msg("ack failed; the event will be redelivered")
		}
		w.m.event(ev.Type, outcomeNoFetch, time.Since(start).Seconds())
		return
	}
	var dl delivery
	if md, err := msg.Metadata(); err == nil {
		dl = delivery{seq: md.Sequence.Stream, delivered: md.NumDelivered, stored: md.Timestamp}
	}
	stop := w.keepAlive(msg)
	var outcome string
	for attempt := 0; ; attempt++ {
		hctx, cancel := context.WithTimeout(ctx, w.opts.HandleTimeout)
		outcome, err = w.handle(hctx, ev, dl)
		cancel()
		var te transientError
		if err == nil || !errors.As(err, &te) || attempt >= inProcessRetries || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
	}
	stop()
	var pe permanentError
	var we waitError
	switch {
	case errors.As(err, &we):
		if w.cfg.MaxDeliver > 0 && int(dl.delivered) >= w.cfg.MaxDeliver-1 {
			outcome = outcomeNoPin
			msg.Ack()
			break
		}
		msg.NakWithDelay(we.delay)
		outcome = outcomeWaiting
	case err == nil:
		if aerr := msg.Ack(); aerr != nil {
			w.log.Warn().Err(aerr).Msg("ack failed; the event will be redelivered")
		}
	case errors.As(err, &pe):
		w.deadLetter(ctx, msg, pe.reason, err)
		outcome = outcomeDeadLetter
	default:
		md, _ := msg.Metadata()
		if md != nil && w.cfg.MaxDeliver > 0 && int(md.NumDelivered) >= w.cfg.MaxDeliver {
			w.deadLetter(ctx, msg, "max-deliver", err)
			outcome = outcomeDeadLetter
			break
		}
		delay := time.Second
		if md != nil {
			delay = min(time.Duration(1<<min(md.NumDelivered, 6))*time.Second, time.Minute)
		}
		w.log.Warn().Err(err).Str("type", ev.Type).Str("task", ev.TaskID()).Dur("retryIn", delay).Msg("event failed; will retry")
		msg.NakWithDelay(delay)
		outcome = outcomeRetry
	}
	w.m.event(ev.Type, outcome, time.Since(start).Seconds())
}

// keepAlive tells the server the event is in progress while a slow fetch runs,
// so that it is not redelivered to another worker meanwhile. It costs nothing
// for fast events: a timer, no goroutine, until the first tick. The returned
// func stops it.
func (w *Worker) keepAlive(msg jetstream.Msg) func() {
	every := w.cfg.AckWait / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		msg.InProgress()
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		t.Stop()
	}
}

// deadLetter copies msg to the dead-letter stream with the reason, then
// terminates it so that it is never redelivered.
func (w *Worker) deadLetter(ctx context.Context, msg jetstream.Msg, reason string, cause error) {
	w.m.deadLetter(reason)
	dl := nats.NewMsg(w.dlqPrefix() + "." + reason)
	for k, v := range msg.Headers() {
		dl.Header[k] = v
	}
	dl.Header.Set("Carddrift-Dead-Letter-Reason", reason)
	dl.Header.Set("Carddrift-Error", truncate(cause.Error(), 1024))
	dl.Header.Set("Carddrift-Original-Subject", msg.Subject())
	if md, err := msg.Metadata(); err == nil {
		dl.Header.Set("Carddrift-Stream-Sequence", fmt.Sprint(md.Sequence.Stream))
		dl.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", md.Stream, md.Sequence.Stream))
	}
	dl.Data = msg.Data()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := w.js.PublishMsg(pctx, dl); err != nil {
		// Without a dead-letter copy, terminating would lose the event: let it
		// be redelivered instead.
		w.log.Error().Err(err).Str("reason", reason).Msg("dead-letter publish failed; event left for redelivery")
		msg.NakWithDelay(10 * time.Second)
		return
	}
	w.log.Warn().Str("reason", reason).Err(cause).Str("subject", msg.Subject()).Msg("event dead-lettered")
	msg.TermWithReason(reason)
}

func (w *Worker) dlqPrefix() string {
	s := w.cfg.DLQSubjects
	if len(s) > 2 && s[len(s)-2:] == ".>" {
		return s[:len(s)-2]
	}
	return "carddrift.dlq"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// needsIO reports whether handling ev may read the pin, fetch or publish:
// false for the lifecycle steps that need no live card (see handle).
func needsIO(ev events.Event) bool {
	switch d := ev.Data.(type) {
	case events.Request:
		return d.Attempt > 1 || detector.IsCapabilityMethod(d.Method)
	case events.Status:
		return detector.IsCapabilityState(d.State)
	case events.Error:
		return detector.IsSchemaClassError(d.Code)
	}
	return true
}

// handle dispatches one decoded event and returns its outcome.
func (w *Worker) handle(ctx context.Context, ev events.Event, dl delivery) (string, error) {
	switch d := ev.Data.(type) {
	case events.Submitted:
		return w.submitted(ctx, ev, d, dl)
	case events.Request:
		if d.Attempt <= 1 && !detector.IsCapabilityMethod(d.Method) {
			return outcomeNoFetch, nil
		}
		return w.transition(ctx, ev, dl, d.TaskID, func(t *task) {
			if d.Attempt <= 1 {
				return
			}
			t.retry = true
			t.method, t.attempt = d.Method, d.Attempt
			// Blind only if the schema-class error precedes this retry in
			// the stream (a redelivery may have brought it here later).
			t.errorBefore = !t.pin.SchemaErrorAt.IsZero() &&
				(dl.seq == 0 || t.pin.SchemaErrorSeq == 0 || t.pin.SchemaErrorSeq < dl.seq)
			// A retry after a schema-class error is evidence of drift.
			t.force = t.errorBefore
			if dl.seq == 0 || dl.seq > t.pin.RetrySeq {
				t.pin.RetrySeq, t.pin.RetryMethod, t.pin.RetryAttempt = dl.seq, d.Method, d.Attempt
				t.pinDirty = true
			}
		})
	case events.Status:
		if !detector.IsCapabilityState(d.State) {
			return outcomeNoFetch, nil
		}
		return w.transition(ctx, ev, dl, d.TaskID, func(t *task) {
			if st, _ := detector.NormalizeState(d.State); st == detector.StateInputRequired && t.pinned != nil {
				if f, ok := detector.CheckInputRequest(t.pinned, d.SkillID); ok {
					t.findings = append(t.findings, f)
					t.force = true
				}
			}
		})
	case events.Artifact:
		return w.transition(ctx, ev, dl, d.TaskID, func(t *task) {
			if t.pinned != nil {
				if fs := detector.CheckArtifact(t.pinned, t.pin.Requirements.SkillID, d.ArtifactID, d.MediaTypes); len(fs) > 0 {
					t.findings = append(t.findings, fs...)
					t.force = true
				}
			}
		})
	case events.Error:
		if !detector.IsSchemaClassError(d.Code) {
			return outcomeNoFetch, nil
		}
		return w.transition(ctx, ev, dl, d.TaskID, func(t *task) {
			if dl.seq == 0 || dl.seq > t.pin.SchemaErrorSeq {
				t.pin.SchemaErrorAt = w.eventTime(ev)
				t.pin.SchemaErrorCode = d.Code
				t.pin.SchemaErrorSeq = dl.seq
				t.pinDirty = true
			}
			// A retry that follows this error in the stream was handled
			// before it (out of order): judge that retry now.
			if dl.seq != 0 && t.pin.RetrySeq > dl.seq {
				t.retry, t.errorBefore = true, true
				t.method, t.attempt = t.pin.RetryMethod, t.pin.RetryAttempt
			}
			t.force = true
		})
	}
	// Outbound types on the inbound stream: nothing a worker should act on.
	return "", permanentError{reason: "unexpected-type", err: fmt.Errorf("event type %s is not a lifecycle event", ev.Type)}
}

func (w *Worker) eventTime(ev events.Event) time.Time {
	if !ev.Time.IsZero() {
		return ev.Time.UTC()
	}
	return w.opts.Now().UTC()
}

// task is the state of one capability-dependent transition being judged.
type task struct {
	pin      detector.Pin
	rev      uint64
	pinned   *detector.Card // nil when the pinned body is unknown
	findings []detector.Finding
	force    bool
	pinDirty bool

	retry       bool
	errorBefore bool // a schema-class error precedes the retry in the stream
	method      string
	attempt     int
}

// transition fetches the live card for a task's capability-dependent
// transition and evaluates it against the pin; prepare adds task-level
// findings and decides whether the fetch is forced.
func (w *Worker) transition(ctx context.Context, ev events.Event, dl delivery, taskID string, prepare func(*task)) (string, error) {
	pin, rev, err := w.opts.Pins.Get(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) {
		if grace := w.noPinGrace(); !dl.stored.IsZero() && w.opts.Now().Sub(dl.stored) < grace {
			return "", waitError{delay: max(w.cfg.AckWait/3, time.Second)}
		}
		return outcomeNoPin, nil
	}
	if err != nil {
		return "", transient(fmt.Errorf("get pin: %w", err))
	}
	t := &task{pin: pin, rev: rev}
	if pin.Digest != "" {
		if t.pinned, err = w.pinnedCard(ctx, pin.Digest); err != nil {
			return "", err
		}
	}
	prepare(t)

	obs, err := w.fetch.ObserveAgent(ctx, pin.AgentURL, pin.CardURL, t.force)
	if err == nil && obs.Digest != pin.Digest && obs.FromLease && obs.FetchedAt.Before(pin.PinnedAt) {
		// A shared observation older than the pin cannot show the pin is
		// stale: the client may have read a newer card than the lease holds.
		obs, err = w.fetch.ObserveAgent(ctx, pin.AgentURL, pin.CardURL, true)
	}
	if err != nil {
		if t.pinDirty {
			if err := w.savePin(ctx, t); err != nil {
				return "", err
			}
		}
		return w.unreachable(ctx, ev, pin.AgentURL, pin.CardURL, taskID, err)
	}
	if pin.Digest == "" {
		// A pending pin (its first fetch failed): complete it now.
		return w.completePin(ctx, ev, t, obs)
	}
	if t.retry && t.errorBefore {
		if f, ok := detector.CheckRetry(t.pin, t.method, t.attempt, obs.Digest); ok {
			t.findings = append(t.findings, f)
		}
	}
	return w.evaluate(ctx, ev, t, obs)
}

// evaluate publishes card.drift when the live card differs from the pin or a
// task-level finding exists, once per (pin, live digest, rules).
func (w *Worker) evaluate(ctx context.Context, ev events.Event, t *task, obs fetcher.Observation) (string, error) {
	if obs.Digest == t.pin.Digest && len(t.findings) == 0 {
		if t.pinDirty {
			if err := w.savePin(ctx, t); err != nil {
				return "", err
			}
		}
		return outcomeUnchanged, nil
	}
	req := t.pin.Requirements
	var findings []detector.Finding
	var v detector.Verdict
	if t.pinned != nil {
		findings, v = detector.Evaluate(t.pinned, obs.Card, req, req.Posture, t.findings...)
	} else {
		// A client digest of a card carddrift never saw: it can tell the
		// pinned card is not the live one (pinned-card-unknown), not what
		// changed.
		findings, v = detector.EvaluateUnknown(t.pin.Digest, obs.Digest, obs.Card, req, req.Posture, t.findings...)
	}
	if findings == nil {
		findings = []detector.Finding{}
	}
	drift := events.Drift{
		TaskID: t.pin.TaskID, AgentURL: t.pin.AgentURL, CardURL: obs.CardURL,
		Pinned:   events.CardRef{Digest: t.pin.Digest, Fingerprint: t.pin.Fingerprint, ETag: t.pin.ETag, FetchedAt: t.pin.PinnedAt},
		Live:     events.CardRef{Digest: obs.Digest, Fingerprint: obs.Fingerprint, ETag: obs.ETag, FetchedAt: obs.FetchedAt.UTC()},
		Findings: findings, Verdict: v,
		Trigger: events.Trigger{EventID: ev.ID, Type: ev.Type, Source: ev.Source},
	}
	id := events.MsgID(drift)
	if t.pin.HasReported(id) {
		if t.pinDirty {
			if err := w.savePin(ctx, t); err != nil {
				return "", err
			}
		}
		return outcomeDrift, nil
	}
	if err := w.publish(ctx, drift, t.pin.TaskID); err != nil {
		return "", err
	}
	for _, f := range findings {
		w.m.drift(f.Rule, string(v.Action))
	}
	w.log.Info().Str("task", t.pin.TaskID).Str("agent", t.pin.AgentURL).Str("action", string(v.Action)).
		Str("reason", v.Reason).Msg("card.drift")
	t.pin.AddReported(id)
	t.pin.LiveDigest = obs.Digest
	t.pinDirty = true
	if err := w.savePin(ctx, t); err != nil && !errors.Is(err, store.ErrConflict) {
		// The drift is published; failing to record it only means a later
		// transition may publish it again (and the stream's dedup window
		// drops it if it is recent).
		w.log.Warn().Err(err).Str("task", t.pin.TaskID).Msg("could not record the published drift in the pin")
	}
	return outcomeDrift, nil
}

// savePin writes t.pin back with compare-and-set. A conflict means another
// event of the task was handled meanwhile (only possible across a partition
// hand-over): the next event re-reads the pin.
func (w *Worker) savePin(ctx context.Context, t *task) error {
	rev, err := w.opts.Pins.Update(ctx, t.pin, t.rev)
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return transient(fmt.Errorf("update pin: %w", err))
	}
	t.rev, t.pinDirty = rev, false
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
		return nil, permanentError{reason: "corrupt-card", err: err}
	}
	w.cards.put(digest, c)
	return c, nil
}

// unreachable publishes card.unreachable for a failed fetch. It is not
// drift: the pin stays as it was.
func (w *Worker) unreachable(ctx context.Context, ev events.Event, agentURL, cardURL, taskID string, err error) (string, error) {
	if ctx.Err() != nil || errors.Is(err, fetcher.ErrStore) {
		// Shutting down, out of time, or the lease/card store failed: none of
		// these says anything about the agent. Try again later.
		return "", transient(err)
	}
	reason, detail := "transport", err.Error()
	var fe *fetcher.FetchError
	if errors.As(err, &fe) {
		reason = string(fe.Reason)
		if fe.URL != "" {
			cardURL = fe.URL
		}
		if fe.Reason == fetcher.ReasonCanceled {
			return "", transient(err)
		}
	}
	if cardURL == "" {
		cardURL = agentURL
	}
	u := events.Unreachable{
		AgentURL: agentURL, CardURL: cardURL, Reason: reason, Detail: truncate(detail, 512),
		TaskID: taskID, AttemptedAt: w.opts.Now().UTC(),
		Trigger: events.Trigger{EventID: ev.ID, Type: ev.Type, Source: ev.Source},
	}
	if err := w.publish(ctx, u, taskID); err != nil {
		return "", err
	}
	return outcomeUnreachable, nil
}

// agentOf returns scheme://host of a card URL.
func agentOf(cardURL string) string {
	u, err := url.Parse(cardURL)
	if err != nil || u.Host == "" {
		return cardURL
	}
	return u.Scheme + "://" + u.Host
}

// noPinGrace is how long after it was stored an event of a task with no pin
// waits for the task's submission: long enough for a submission held by a
// worker that died to be redelivered (AckWait) to a worker that holds the
// partition (PinnedTTL), twice over.
func (w *Worker) noPinGrace() time.Duration {
	return 2*w.cfg.AckWait + w.opts.PinnedTTL
}
