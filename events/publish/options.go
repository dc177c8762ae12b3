package publish

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events"
)

// DefaultTimeout bounds each publish (send and wait for the JetStream ack)
// of a Publisher (and so of a client.Emitter) unless WithTimeout says
// otherwise.
const DefaultTimeout = 5 * time.Second

// Option configures a Publisher, or a client.Emitter (which publishes
// with one). The error messages keep the "events:" prefix they had when
// both lived in package events.
type Option func(*options) error

// DefaultBuffer is how many events a Queue (and so a client.Emitter) holds
// at most, queued or awaiting their ack, unless WithBuffer says otherwise.
const DefaultBuffer = 4096

type options struct {
	mode    events.Mode
	timeout time.Duration
	now     func() time.Time
	newID   func() string
	buffer  int
	log     zerolog.Logger
}

func defaultOptions() options {
	return options{
		mode:    events.Binary,
		timeout: DefaultTimeout,
		now:     time.Now,
		newID:   uuid.NewString,
		buffer:  DefaultBuffer,
		log:     zerolog.Nop(),
	}
}

func (o *options) apply(opts []Option) error {
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return err
		}
	}
	return nil
}

// WithMode sets the content mode of published events (events.Binary by
// default).
func WithMode(m events.Mode) Option {
	return func(o *options) error {
		if m != events.Binary && m != events.Structured {
			return fmt.Errorf("events: invalid mode %d", m)
		}
		o.mode = m
		return nil
	}
}

// WithTimeout bounds each publish call, ack included (DefaultTimeout by
// default). The caller's context can only shorten it. A Queue waits as long
// for each ack before it tries again, and Close as long for what is
// pending when its ctx has no deadline.
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("events: timeout must be positive")
		}
		o.timeout = d
		return nil
	}
}

// WithClock sets the clock that stamps the CloudEvents time attribute
// (time.Now by default). Tests and examples use it to be deterministic.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("events: nil clock")
		}
		o.now = now
		return nil
	}
}

// WithIDs sets the generator of CloudEvents ids of inbound events (a random
// UUID by default). Ids must be unique per source: the Nats-Msg-Id is
// source + "/" + id, so a repeated id is dropped as a duplicate.
func WithIDs(newID func() string) Option {
	return func(o *options) error {
		if newID == nil {
			return errors.New("events: nil id generator")
		}
		o.newID = newID
		return nil
	}
}

// WithBuffer bounds the events a Queue (and so a client.Emitter) holds,
// queued or published and awaiting their ack (DefaultBuffer by default):
// what comes while it is full is dropped and counted.
func WithBuffer(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return errors.New("events: buffer must be positive")
		}
		o.buffer = n
		return nil
	}
}

// WithLogger sets where a Queue (and so a client.Emitter) warns of dropped
// events, at most once per DropWarnEvery (nothing is logged by default).
func WithLogger(l zerolog.Logger) Option {
	return func(o *options) error {
		o.log = l
		return nil
	}
}
