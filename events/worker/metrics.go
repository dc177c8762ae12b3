package worker

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the worker's Prometheus collectors. Register them with a
// registry of your own (NewMetrics does); a nil *Metrics records nothing.
type Metrics struct {
	Events      *prometheus.CounterVec   // type, outcome
	Fetches     *prometheus.CounterVec   // result: 200, 304, or an unreachable reason
	Drift       *prometheus.CounterVec   // rule, action
	Published   *prometheus.CounterVec   // type, result: published, duplicate, error
	DeadLetters *prometheus.CounterVec   // reason
	EventTime   *prometheus.HistogramVec // type
	FetchTime   prometheus.Histogram
	// Refused counts writes the store refused for lack of space, by reason
	// (store.NoSpace); HeldForSpace is the events held meanwhile.
	Refused      *prometheus.CounterVec // reason
	HeldForSpace prometheus.Gauge

	hot sync.Map // [2]string{type, outcome} → *hotPair
}

// NewMetrics creates the worker's collectors and registers them with reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events:      counters("carddrift_events_total", "Lifecycle events handled, by type and outcome.", "type", "outcome"),
		Fetches:     counters("carddrift_fetches_total", "Card fetches completed by this worker, by result (200, 304 or the unreachable reason).", "result"),
		Drift:       counters("carddrift_drift_total", "card.drift findings published, by rule and verdict action.", "rule", "action"),
		Published:   counters("carddrift_published_total", "Outbound events, by type and result (published, duplicate, error).", "type", "result"),
		DeadLetters: counters("carddrift_dead_letters_total", "Events copied to the dead-letter stream, by reason.", "reason"),
		EventTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "carddrift_event_duration_seconds", Help: "Time to handle one lifecycle event, publishing included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"type"}),
		FetchTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "carddrift_fetch_duration_seconds", Help: "Latency of card fetches and revalidations.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		Refused: counters("carddrift_writes_refused_total", "Writes (verdicts, pins, cards) the store refused for lack of space, by reason; "+
			"their events are held unacknowledged and written once space returns.", "reason"),
		HeldForSpace: prometheus.NewGauge(prometheus.GaugeOpts{Name: "carddrift_events_held_for_space",
			Help: "Lifecycle events held unacknowledged because the store refuses their writes for lack of space (not ready while positive)."}),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.Fetches, m.Drift, m.Published, m.DeadLetters, m.EventTime, m.FetchTime, m.Refused, m.HeldForSpace)
	}
	return m
}

// counters is a counter vector partitioned by labels.
func counters(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func (m *Metrics) event(typ, outcome string, seconds float64) {
	if m == nil {
		return
	}
	key := [2]string{typ, outcome}
	v, ok := m.hot.Load(key)
	if !ok {
		v, _ = m.hot.LoadOrStore(key, &hotPair{count: m.Events.WithLabelValues(typ, outcome), time: m.EventTime.WithLabelValues(typ)})
	}
	h := v.(*hotPair)
	h.count.Inc()
	h.time.Observe(seconds)
}

// hotPair caches the label-resolved collectors of one (type, outcome): the
// per-event path then does no label hashing.
type hotPair struct {
	count prometheus.Counter
	time  prometheus.Observer
}

func (m *Metrics) fetch(result string, seconds float64) {
	if m == nil {
		return
	}
	m.Fetches.WithLabelValues(result).Inc()
	if seconds > 0 {
		m.FetchTime.Observe(seconds)
	}
}

func (m *Metrics) published(typ, result string) {
	if m == nil {
		return
	}
	m.Published.WithLabelValues(typ, result).Inc()
}

func (m *Metrics) drift(rule, action string) {
	if m == nil {
		return
	}
	m.Drift.WithLabelValues(rule, action).Inc()
}

func (m *Metrics) deadLetter(reason string) {
	if m == nil {
		return
	}
	m.DeadLetters.WithLabelValues(reason).Inc()
}

func (m *Metrics) refused(reason string) {
	if m != nil {
		m.Refused.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) waitingForSpace(n int) {
	if m != nil {
		m.HeldForSpace.Add(float64(n))
	}
}
