package publish

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
)

// Publisher publishes events to JetStream with deduplication: every message
// carries a Nats-Msg-Id, and Publish waits for the stream's ack. It is what
// carddrift workers use for card.* events; client.Emitter wraps it for A2A
// clients. Safe for concurrent use. It owns no goroutines and holds nothing
// to close; the caller owns the JetStream connection.
type Publisher struct {
	js     jetstream.Publisher
	source string
	opts   options
}

// New returns a Publisher that stamps source (a URI-reference, for example
// the worker name) on events that have none. js is usually a
// jetstream.JetStream. It returns an error for an invalid source
// (events.ErrInvalidEvent) or option; it does not touch the network.
func New(js jetstream.Publisher, source string, opts ...Option) (*Publisher, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream publisher", events.ErrInvalidEvent)
	}
	if err := events.CheckSource(source); err != nil {
		return nil, err
	}
	o := defaultOptions()
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	return &Publisher{js: js, source: source, opts: o}, nil
}

// Publish encodes e (see events.Encode) and publishes it, waiting for the
// JetStream ack within the publisher's timeout. It fills what e leaves
// empty: Source (the publisher's source), Time (now), and ID — for outbound
// card.* data the deterministic events.MsgID(e.Data), for inbound data a
// fresh id.
//
// The Nats-Msg-Id is MsgID(e.Data) for outbound data, whatever e.ID is, and
// Source + "/" + ID for inbound data. dup is true when the stream already
// held a message with that id within its duplicate window: the event was
// published before (by this or another worker) and was not stored again.
//
// Errors: those of Encode (events.ErrInvalidEvent,
// events.ErrSchemaViolation), and JetStream publish errors (wrapped;
// context.DeadlineExceeded on timeout, jetstream.ErrNoStreamResponse when
// no stream covers the subject).
func (p *Publisher) Publish(ctx context.Context, e events.Event) (dup bool, err error) {
	msg, err := p.Message(e)
	if err != nil {
		return false, err
	}
	// The timeout bounds the publish; a caller's deadline that comes first
	// bounds it already, and then no timer of its own is needed.
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > p.opts.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.timeout)
		defer cancel()
	}
	ack, err := p.js.PublishMsg(ctx, msg)
	if err != nil {
		// The "events:" prefix is the message's as it was when Publisher
		// lived in package events: logs and alerts match on it.
		return false, fmt.Errorf("events: publish %s on %s: %w", e.Data.EventType(), msg.Subject, err)
	}
	return ack.Duplicate, nil
}

// Message returns the message Publish would publish for e: e stamped and
// encoded as Publish does, with its Nats-Msg-Id header set, ready for
// jetstream's PublishMsg or PublishMsgAsync (which need no WithMsgID). A
// retry of the same message is stored once within the stream's duplicate
// window. Errors: those of events.Encode.
func (p *Publisher) Message(e events.Event) (*nats.Msg, error) {
	if e.Source == "" {
		e.Source = p.source
	}
	if e.Time.IsZero() {
		e.Time = p.opts.now()
	}
	msgID := events.MsgID(e.Data)
	if e.ID == "" {
		e.ID = msgID
		if e.ID == "" {
			e.ID = p.opts.newID()
		}
	}
	if msgID == "" {
		msgID = e.Source + "/" + e.ID
	}
	msg, err := events.Encode(e, p.opts.mode)
	if err != nil {
		return nil, err
	}
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	return msg, nil
}

// Timeout is the bound of each publish and ack wait (DefaultTimeout unless
// WithTimeout).
func (p *Publisher) Timeout() time.Duration { return p.opts.timeout }
