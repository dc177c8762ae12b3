package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
)

// Outcomes of one event, the "outcome" label of carddrift_events_total, that
// are the shell's own; the others are the core's (task.Outcome*).
const (
	outcomeRetry      = "retry"       // NAKed for redelivery
	outcomeDeadLetter = "dead-letter" // terminated and copied to the DLQ
	outcomeWaiting    = "waiting"     // no pin yet: NAKed until its submission arrives
)

// delivered is one lifecycle message on its way through the handler chain:
// the message, its event, where it sits in the stream, when the worker took
// it and how to end its keepAlive.
type delivered struct {
	msg   jetstream.Msg
	ev    events.Event
	at    delivery
	start time.Time
	stop  func() // ends msg's keepAlive; safe to call again
}

// handlerFunc handles one delivered event. It returns the event's outcome
// (the outcome label of carddrift_events_total) and a nil error when it is
// done with the message, or an error when it is not: the wrapper around it
// then acts on the error or hands it on. The innermost handler (handler)
// only handles, and acknowledge acknowledges what it handled; every wrapper
// outside acknowledge settles the message itself for the errors it takes —
// a NAK, or a dead letter and a termination — and returns nil. redeliver,
// the outermost of them, NAKs any error left, so that every message leaves
// the chain settled once (or, if settling it failed, redelivered after
// AckWait).
type handlerFunc func(ctx context.Context, d *delivered) (outcome string, err error)

// middleware wraps a handlerFunc with one concern of delivery policy (the
// shape of watermill's message.HandlerMiddleware).
type middleware func(handlerFunc) handlerFunc

// compose wraps h in mw: the first of mw is the outermost.
func compose(h handlerFunc, mw ...middleware) handlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// chain is the worker's delivery policy around h, outermost first: each
// wrapper decides one thing, in a file of its own.
func (w *Worker) chain(h handlerFunc) handlerFunc {
	return compose(h,
		// count.go: carddrift_events_total and the event's duration.
		count(w.m),
		// redeliver.go: any failure left: NAK with the growing delay (retry).
		redeliver(w.log),
		// poison.go: a permanent failure, and any failure on the
		// MaxDeliver-th delivery or a later one: dead letter.
		poison(w.cfg.MaxDeliver, w.deadLetterOutcome),
		// wait.go: no pin yet: NAK with the wait's delay (waiting); from the
		// delivery before the MaxDeliver-th: ack as no-pin.
		awaitPin(w.cfg.MaxDeliver),
		// ack.go: handled: ack.
		acknowledge(w.acks),
		// keepalive.go: the handling is over: no more InProgress.
		inProgress,
		// poison.go: past MaxDeliver: not handled again (poison
		// dead-letters it).
		pastMaxDeliver(w.cfg.MaxDeliver),
		// retry.go: a transient failure: again in process, with backoff.
		retry(inProcessRetries, retryBackoff),
		// nospace.go: a write refused for lack of space: again in process,
		// backing off, until the store takes it (never dead-lettered for it).
		noSpace(w.space),
		// timeout.go: each attempt its own deadline (HandleTimeout).
		timeout(w.opts.HandleTimeout),
	)
}

// handler is the innermost of the chain: it handles the event (handle), and
// only that.
func (w *Worker) handler(ctx context.Context, d *delivered) (string, error) {
	return w.handle(ctx, d.ev, d.at)
}

// handleMsg takes one message of a partition, in stream order: events that
// need no live card are acknowledged at once; malformed events and those
// whose subject disagrees with them are dead-lettered through the
// dispatcher (by subject), the others go to it by task: it handles events
// of different tasks concurrently and those of one task in stream order
// (process).
func (w *Worker) handleMsg(ctx context.Context, msg jetstream.Msg) {
	start := time.Now()
	ev, err := events.Decode(msg)
	if err != nil {
		w.deadLetterFirst(ctx, msg, "invalid", ReasonMalformed, err, start)
		return
	}
	if err := w.checkSubject(msg.Subject(), ev); err != nil {
		// Before anything reads or writes a pin: the event names a task
		// its subject does not, and sits in another task's partition.
		w.deadLetterFirst(ctx, msg, ev.Type, ReasonSubjectMismatch, err, start)
		return
	}
	if !task.NeedsCard(ev) {
		// The fast path of most lifecycle events: nothing to fetch, store or
		// publish.
		w.acks.ack(msg, nil)
		w.m.event(ev.Type, task.OutcomeNoFetch, time.Since(start).Seconds())
		return
	}
	// Kept in progress from now, not from when its turn comes: an event
	// queued behind its task's earlier ones is not redelivered meanwhile
	// (and queued a second time, its bytes no longer counted in flight).
	stop := w.keepAlive(msg)
	w.dispatch.submit(ev.TaskID(), func() { w.process(ctx, msg, ev, start, stop) })
}

// deadLetterFirst dead-letters msg before it reaches its task, and counts
// it as typ. Dead letters go through the dispatcher, keyed by the subject:
// a dead-letter stream that does not answer holds back the events of that
// subject only, not every task of the partition behind them (each publish
// waits up to its timeout). They are kept in progress while queued, as
// process's events are.
func (w *Worker) deadLetterFirst(ctx context.Context, msg jetstream.Msg, typ string, reason DeadLetterReason, cause error, start time.Time) {
	stop := w.keepAlive(msg)
	w.dispatch.submit(deadLetterKey(msg), func() {
		defer stop()
		w.m.event(typ, w.deadLetterOutcome(ctx, msg, reason, cause), time.Since(start).Seconds())
	})
}

// deadLetterKey is the dispatcher's key of an event dead-lettered before
// it reaches its task: its subject, so that dead letters of one subject keep
// their order. (A task id equal to it only shares the queue.)
func deadLetterKey(msg jetstream.Msg) string { return "\x00dead-letter\x00" + msg.Subject() }

// process takes one event that needs the task's pin or a live card through
// the chain, which handles it and acknowledges, NAKs or dead-letters it.
// The dispatcher runs it after the task's earlier events; stop ends the
// event's keepAlive.
func (w *Worker) process(ctx context.Context, msg jetstream.Msg, ev events.Event, start time.Time, stop func()) {
	if w.js.Conn().IsClosed() {
		// The connection is gone (a shutdown or a crash): nothing can be
		// acknowledged, the event will be redelivered. Do not try.
		stop()
		return
	}
	d := &delivered{msg: msg, ev: ev, start: start, stop: stop}
	if md, err := msg.Metadata(); err == nil {
		d.at = delivery{subject: msg.Subject(), seq: md.Sequence.Stream, delivered: md.NumDelivered, stored: md.Timestamp}
	}
	w.deliver(ctx, d)
}
