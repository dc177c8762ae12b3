package replay

import (
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/store"
)

// DefaultIdleTimeout is how long a read waits for the next message of a
// stream before it gives up with ErrStalled.
const DefaultIdleTimeout = 10 * time.Second

// Defaults of the bounds of a windowed read (Options).
const (
	DefaultClockSkew    = 500 * time.Millisecond
	DefaultLatency      = 2 * time.Second
	DefaultFetchLatency = 5 * time.Second
	DefaultLookBack     = 10 * time.Minute
)

// Options configure a Reader. Zero fields take their defaults.
type Options struct {
	// Config names the lifecycle and card events streams (store.Config; zero
	// fields take their defaults, so the default names A2A_TASKS and
	// CARD_EVENTS). Whether the lifecycle stream is partitioned is read from
	// the stream itself.
	Config store.Config
	// Cards holds the recorded card bodies by digest (store.Bind's Cards).
	// Required: changes, card history and re-evaluation diff recorded bodies.
	Cards store.Cards
	// IdleTimeout bounds the wait for the next message of a read (default
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ClockSkew is how far ahead of the stream's clock an event's own time
	// may be: a window's reads start that long before Since (default
	// DefaultClockSkew).
	ClockSkew time.Duration
	// Latency is how long after its time a lifecycle event (and a card
	// event other than an observation) may be stored, FetchLatency the same
	// for an observation, whose time is when the card was fetched: a
	// window's reads stop that long after Until (defaults DefaultLatency,
	// DefaultFetchLatency). An event stored later than that after its time
	// is left out of a window that ends before it was stored.
	Latency      time.Duration
	FetchLatency time.Duration
	// LookBack bounds how far before a window's start the card events
	// stream is read for the state the window opens in: each agent's last
	// observed card and the pins of the tasks it continues, which the
	// window's changes and stories start from (default DefaultLookBack).
	LookBack time.Duration
}

// Reader reads carddrift's history. Build it with New; it is safe for
// concurrent use and holds no goroutine or consumer between calls (each call
// creates its ordered consumers and stops them before it returns). It does
// not own the connection.
type Reader struct {
	js    jetstream.JetStream
	cfg   store.Config
	cards store.Cards
	idle  time.Duration
	// Bounds of windowed reads (Options).
	skew, late, fetchLate, lookBack time.Duration

	mu      sync.Mutex
	bodies  map[string]*body
	changes map[[2]string]Change
}

// body is a parsed recorded card, or why there is none.
type body struct {
	card    *detector.Card
	missing bool  // not in the Cards store
	err     error // the stored body does not parse
}

// New returns a Reader over js. It validates opts and does no I/O.
func New(js jetstream.JetStream, opts Options) (*Reader, error) {
	if js == nil {
		return nil, errors.New("replay: nil JetStream")
	}
	if opts.Cards == nil {
		return nil, errors.New("replay: Options.Cards is required")
	}
	cfg := opts.Config
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts.IdleTimeout = defaults.Positive(opts.IdleTimeout, DefaultIdleTimeout)
	return &Reader{
		js: js, cfg: cfg, cards: opts.Cards, idle: opts.IdleTimeout,
		skew: defaults.Positive(opts.ClockSkew, DefaultClockSkew), late: defaults.Positive(opts.Latency, DefaultLatency),
		fetchLate: defaults.Positive(opts.FetchLatency, DefaultFetchLatency), lookBack: defaults.Positive(opts.LookBack, DefaultLookBack),
		bodies: map[string]*body{}, changes: map[[2]string]Change{},
	}, nil
}
