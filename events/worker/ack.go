package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// acknowledge acknowledges an event the handler handled, through the
// worker's acker: each event is acknowledged only after every event it
// caused is stored — the handler returns once its pin writes are done and
// its publishes waited for, or handed over as futures (later) that the acker
// waits for first. A failed acknowledgement is logged; the event is
// redelivered and handled again (its outcomes are idempotent). Errors pass
// through to the wrappers outside.
func acknowledge(a *acker) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			d.at.later = &later{}
			outcome, err := h(ctx, d)
			if err != nil {
				return outcome, err
			}
			a.ack(d.msg, d.at.later.acks)
			return outcome, nil
		}
	}
}

// later collects the publishes of one delivery that its acknowledgement
// waits for (publishLater); nil: the handler waits for each publish itself.
type later struct{ acks []published }

// published is one card event published asynchronously.
type published struct {
	typ string
	ack jetstream.PubAckFuture
}

const (
	// ackBuffer bounds the acknowledgements the acker holds; when it is
	// full the handler acknowledges itself (waiting for its publishes).
	ackBuffer = 1024
	// ackLinger is how long the acker gathers acknowledgements after one
	// arrives, so that one write carries many; ackBatch bounds how many.
	ackLinger = time.Millisecond
	ackBatch  = 256
)

// acker acknowledges events off the handlers' path, a batch at a time,
// each once the publishes it waits for have their PubAcks (an event whose
// publish failed is NAKed: redelivered, handled again, its publishes
// deduplicated). Its goroutine is the worker's, for the length of Run
// (run); without it (no in: before Run) every acknowledgement is made by
// the caller.
type acker struct {
	log     zerolog.Logger
	m       *Metrics
	timeout time.Duration // bounds the wait for a PubAck
	in      chan pendingAck
}

type pendingAck struct {
	msg  jetstream.Msg
	acks []published
}

// ack hands msg to the acker, or acknowledges it now when the acker is
// full (or has no goroutine). It never blocks on the acker.
func (a *acker) ack(msg jetstream.Msg, acks []published) {
	select {
	case a.in <- pendingAck{msg, acks}:
	default:
		a.settle(pendingAck{msg, acks}, nil, nil)
	}
}

// run acknowledges what is handed to it until quit, or until drain is
// closed and nothing is left (the handlers have ended by then).
func (a *acker) run(drain, quit <-chan struct{}) {
	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	batch := make([]pendingAck, 0, ackBatch)
	for {
		select {
		case p := <-a.in:
			batch = a.gather(append(batch[:0], p), timer)
		case <-drain:
			select {
			case p := <-a.in:
				batch = append(batch[:0], p)
			default:
				return
			}
		case <-quit:
			return // what is unacknowledged is redelivered
		}
		for _, p := range batch {
			a.settle(p, timer, quit)
		}
	}
}

// gather appends what arrives within ackLinger, up to ackBatch.
func (a *acker) gather(batch []pendingAck, timer *time.Timer) []pendingAck {
	timer.Reset(ackLinger)
	for len(batch) < ackBatch {
		select {
		case p := <-a.in:
			batch = append(batch, p)
		case <-timer.C:
			return batch
		}
	}
	return batch
}

// settle waits for p's publishes (within the timeout each) and acknowledges
// p's message, or NAKs it when one failed.
func (a *acker) settle(p pendingAck, timer *time.Timer, quit <-chan struct{}) {
	for _, pub := range p.acks {
		if timer == nil {
			timer = time.NewTimer(a.timeout)
			defer timer.Stop()
		}
		timer.Reset(a.timeout)
		var err error
		select {
		case ack := <-pub.ack.Ok():
			a.m.published(pub.typ, pubResult(ack.Duplicate))
			continue
		case err = <-pub.ack.Err():
		case <-timer.C:
			err = context.DeadlineExceeded
		case <-quit:
			return // redelivered
		}
		a.m.published(pub.typ, "error")
		a.log.Warn().Err(err).Str("type", pub.typ).Msg("publish failed; the event will be redelivered")
		if nerr := p.msg.NakWithDelay(time.Second); nerr != nil {
			a.log.Warn().Err(nerr).Msg("nak failed; the event will be redelivered")
		}
		return
	}
	if err := p.msg.Ack(); err != nil {
		a.log.Warn().Err(err).Msg("ack failed; the event will be redelivered")
	}
}
