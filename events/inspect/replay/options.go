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
	// Config names the lifecycle and card events streams (store.Config's
	// defaults: A2A_TASKS, CARD_EVENTS).
	Config store.Config
	// Cards holds the recorded card bodies (store.Bind's Cards). Required.
	Cards store.Cards
	// IdleTimeout bounds the wait for the next message of a read.
	IdleTimeout time.Duration
	// ClockSkew is how far ahead of the stream's clock an event's own time
	// may be: a window's reads start that long before Since.
	ClockSkew time.Duration
	// Latency is how long after its time an event may be stored,
	// FetchLatency the same for an observation (its time is its fetch's):
	// a window's reads stop that long after Until.
	Latency      time.Duration
	FetchLatency time.Duration
	// LookBack is how far before a window the card events stream is read
	// for the state the window opens in: each agent's last observed card
	// and the pins of the tasks it continues.
	LookBack time.Duration
}

func (o Options) withDefaults() Options {
	o.IdleTimeout = defaults.Positive(o.IdleTimeout, DefaultIdleTimeout)
	o.ClockSkew = defaults.Positive(o.ClockSkew, DefaultClockSkew)
	o.Latency = defaults.Positive(o.Latency, DefaultLatency)
	o.FetchLatency = defaults.Positive(o.FetchLatency, DefaultFetchLatency)
	o.LookBack = defaults.Positive(o.LookBack, DefaultLookBack)
	o.Config.SetDefaults()
	return o
}

// Reader reads carddrift's history. Build it with New; it is safe for
// concurrent use and holds no goroutine or consumer between calls. It does
// not own the connection.
type Reader struct {
	js   jetstream.JetStream
	opts Options

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
	opts = opts.withDefaults()
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	return &Reader{js: js, opts: opts, bodies: map[string]*body{}, changes: map[[2]string]Change{}}, nil
}
