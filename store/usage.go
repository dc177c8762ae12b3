package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Monitor defaults and thresholds: how often a Monitor reads the streams'
// sizes (one STREAM.INFO request per stream, each bounded), the fraction of
// its byte limit at which a stream counts as full (the Monitor logs it once
// and counts a limit hit), and the fraction below which a full stream no
// longer does (hysteresis: one log line per crossing, not per check).
const (
	DefaultMonitorInterval = 30 * time.Second
	FullRatio              = 0.95
	ClearRatio             = 0.90
	monitorRequestTimeout  = 5 * time.Second
)

// Usage is one stream's size against its byte limit, as the server reports
// it: the Bytes and Msgs it holds now, its byte Limit on the server (-1:
// none) and the sequence of its oldest message, which advances when the
// oldest messages are discarded (or expire, or, in a bucket, are
// overwritten). Buckets are reported under their streams' names
// (KV_<bucket>, OBJ_<bucket>).
type Usage struct {
	Stream      string
	Bytes, Msgs uint64
	Limit       int64
	FirstSeq    uint64
}

// Ratio is Bytes/Limit, or 0 without a limit.
func (u Usage) Ratio() float64 {
	if u.Limit <= 0 {
		return 0
	}
	return float64(u.Bytes) / float64(u.Limit)
}

// MonitorOptions configure a Monitor. Zero fields take their defaults.
type MonitorOptions struct {
	// Interval between checks (default DefaultMonitorInterval; at least 1s).
	Interval time.Duration
	// Logger receives one warning when a stream becomes full, one when a
	// full stream starts discarding, and one info line when it is no
	// longer full (default: no logging).
	Logger *zerolog.Logger
	// Registerer registers the gauges and counters (nil: not registered).
	Registerer prometheus.Registerer
}

// Monitor watches the size of every stream and bucket carddrift creates
// against its byte limit: gauges carddrift_store_bytes{stream},
// carddrift_store_limit_bytes{stream}, carddrift_store_messages{stream},
// counter carddrift_store_limit_hits_total{stream} (times a stream became
// full), and a log line per crossing. Its labels are carddrift's own stream
// names, never publisher data. Build it with NewMonitor; Check reads once,
// Run every Interval. Safe for concurrent use.
type Monitor struct {
	js      jetstream.JetStream
	streams []string
	opts    MonitorOptions
	log     zerolog.Logger

	bytes, limit, msgs *prometheus.GaugeVec
	hits               *prometheus.CounterVec

	mu    sync.Mutex
	state map[string]*fill
}

// fill is what the Monitor remembers of a stream between checks.
type fill struct {
	full       bool   // at or over FullRatio since the last crossing
	discarding bool   // logged that it discards since it became full
	firstSeq   uint64 // at the previous check
}

// NewMonitor returns a Monitor of the streams cfg names (defaults applied)
// and registers its metrics with opts.Registerer. It does no I/O.
func NewMonitor(js jetstream.JetStream, cfg Config, opts MonitorOptions) (*Monitor, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	setDefault(&opts.Interval, DefaultMonitorInterval)
	if opts.Interval < time.Second {
		return nil, invalid("MonitorOptions.Interval", opts.Interval, "must be at least 1s")
	}
	m := &Monitor{js: js, opts: opts, log: zerolog.Nop(), state: map[string]*fill{}}
	if opts.Logger != nil {
		m.log = *opts.Logger
	}
	for name := range cfg.Limits() {
		m.streams = append(m.streams, name)
	}
	slices.Sort(m.streams)
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"stream"})
	}
	m.bytes = gauge("carddrift_store_bytes", "Bytes a stream or bucket carddrift created holds (buckets as KV_<bucket>, OBJ_<bucket>).")
	m.limit = gauge("carddrift_store_limit_bytes", "Byte limit of a stream or bucket carddrift created (-1: none); at the limit the oldest messages are discarded.")
	m.msgs = gauge("carddrift_store_messages", "Messages a stream or bucket carddrift created holds.")
	m.hits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "carddrift_store_limit_hits_total",
		Help: "Times a stream or bucket reached 95% of its byte limit (from below 90%): its oldest history is being discarded.",
	}, []string{"stream"})
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{m.bytes, m.limit, m.msgs, m.hits} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("store: register monitor metrics: %w", err)
			}
		}
	}
	for _, s := range m.streams {
		m.hits.WithLabelValues(s) // every series exists from the start, at 0
	}
	return m, nil
}

// Check reads every stream's size once (one STREAM.INFO request each, each
// within a few seconds), updates the metrics, logs crossings and returns
// the usages read, sorted by stream. A stream that cannot be read is
// skipped and its error joined into the one returned.
func (m *Monitor) Check(ctx context.Context) ([]Usage, error) {
	var out []Usage
	var errs []error
	for _, name := range m.streams {
		rctx, cancel := context.WithTimeout(ctx, monitorRequestTimeout)
		s, err := m.js.Stream(rctx, name)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("store: monitor stream %s: %w", name, err))
			continue
		}
		info := s.CachedInfo()
		u := Usage{Stream: name, Bytes: info.State.Bytes, Msgs: info.State.Msgs, Limit: info.Config.MaxBytes, FirstSeq: info.State.FirstSeq}
		m.record(u)
		out = append(out, u)
	}
	return out, errors.Join(errs...)
}

// record updates the metrics of u and logs a crossing.
func (m *Monitor) record(u Usage) {
	m.bytes.WithLabelValues(u.Stream).Set(float64(u.Bytes))
	m.limit.WithLabelValues(u.Stream).Set(float64(u.Limit))
	m.msgs.WithLabelValues(u.Stream).Set(float64(u.Msgs))

	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state[u.Stream]
	if st == nil {
		st = &fill{firstSeq: u.FirstSeq}
		m.state[u.Stream] = st
	}
	r := u.Ratio()
	switch {
	case !st.full && r >= FullRatio:
		st.full, st.discarding = true, false
		m.hits.WithLabelValues(u.Stream).Inc()
		m.log.Warn().Str("stream", u.Stream).Uint64("bytes", u.Bytes).Int64("limitBytes", u.Limit).
			Msg("store: stream at its byte limit; its oldest history will be discarded (writes still succeed)")
	case st.full && r < ClearRatio:
		st.full = false
		m.log.Info().Str("stream", u.Stream).Uint64("bytes", u.Bytes).Int64("limitBytes", u.Limit).
			Msg("store: stream below its byte limit again")
	}
	if st.full && !st.discarding && u.FirstSeq > st.firstSeq {
		st.discarding = true
		m.log.Warn().Str("stream", u.Stream).Uint64("bytes", u.Bytes).Int64("limitBytes", u.Limit).
			Uint64("firstSeq", u.FirstSeq).Uint64("discarded", u.FirstSeq-st.firstSeq).
			Msg("store: stream full: discarding its oldest messages")
	}
	st.firstSeq = u.FirstSeq
}

// Run checks every Interval until ctx is done, then returns nil. A failed
// check is logged (once per failure streak) and retried at the next tick.
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	failing := false
	for {
		if _, err := m.Check(ctx); err != nil && ctx.Err() == nil {
			if !failing {
				m.log.Warn().Err(err).Msg("store: cannot read stream sizes")
			}
			failing = true
		} else {
			failing = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
