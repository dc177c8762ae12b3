package census

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a census as Prometheus gauges, taking one at most every
// MaxAge (a scrape in between reuses the last): agents whose replicas
// disagree, shared skills whose contracts differ, the tasks pinned and how
// they spread over the agents. Register it with the registry of the
// workers' metrics.
//
// No series is labelled with a value a publisher chose: agent URLs come
// from lifecycle events, so the pins per agent are a histogram (agents by
// their number of pinned tasks, le 1, 10, 100, … 100000), and the count of
// each agent is on /fleet and in carddrift fleet. A scrape exports the same
// series however many agents publishers name.
type Collector struct {
	take    func(ctx context.Context) (*Fleet, error)
	maxAge  time.Duration
	timeout time.Duration

	mu    sync.Mutex
	last  *Fleet
	taken time.Time

	inconsistentAgents *prometheus.Desc
	inconsistentSkills *prometheus.Desc
	pins               *prometheus.Desc
	pinsPerAgent       *prometheus.Desc
	agents             *prometheus.Desc
	failed             *prometheus.Desc
}

// NewCollector returns a Collector over take (for example a closure over
// Take and its Source), caching a census for maxAge (default 15s).
func NewCollector(take func(ctx context.Context) (*Fleet, error), maxAge time.Duration) *Collector {
	if maxAge <= 0 {
		maxAge = 15 * time.Second
	}
	return &Collector{
		take: take, maxAge: maxAge, timeout: 10 * time.Second,
		inconsistentAgents: prometheus.NewDesc("carddrift_agents_inconsistent",
			"Agents whose replicas disagree now (split brain: the live card alternates within the consistency window).", nil, nil),
		inconsistentSkills: prometheus.NewDesc("carddrift_skills_inconsistent",
			"Skill ids several agents offer with different contracts (modes, streaming, push or security).", nil, nil),
		pins: prometheus.NewDesc("carddrift_pins",
			"Tasks pinned now.", nil, nil),
		pinsPerAgent: prometheus.NewDesc("carddrift_pins_per_agent",
			"Agents by the number of tasks pinned on them (agents with no pinned task are not observed; the count of each agent is on /fleet).", nil, nil),
		agents: prometheus.NewDesc("carddrift_agents",
			"Agents carddrift knows (a lease, a pin or an observation).", nil, nil),
		failed: prometheus.NewDesc("carddrift_census_errors",
			"1 when the last census could not be taken (the gauges are then the previous one's).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.inconsistentAgents, c.inconsistentSkills, c.pins, c.pinsPerAgent, c.agents, c.failed} {
		ch <- d
	}
}

// Fleet returns a census no older than the Collector's maxAge, taking one
// when needed (the /fleet page shares it with the gauges).
func (c *Collector) Fleet(ctx context.Context) (*Fleet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && time.Since(c.taken) < c.maxAge {
		return c.last, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	f, err := c.take(ctx)
	if err != nil {
		return c.last, err
	}
	c.last, c.taken = f, time.Now()
	return f, nil
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	f, err := c.Fleet(context.Background())
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, failed)
	if f == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.inconsistentAgents, prometheus.GaugeValue, float64(f.SplitBrains()))
	ch <- prometheus.MustNewConstMetric(c.inconsistentSkills, prometheus.GaugeValue, float64(f.InconsistentSkills()))
	ch <- prometheus.MustNewConstMetric(c.agents, prometheus.GaugeValue, float64(len(f.Agents)))
	total, pinned := 0, 0
	buckets := make(map[float64]uint64, len(pinBuckets))
	for _, a := range f.Agents {
		n := a.Pins()
		if n == 0 {
			continue
		}
		total += n
		pinned++
		for _, b := range pinBuckets {
			if float64(n) <= b {
				buckets[b]++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.pins, prometheus.GaugeValue, float64(total))
	ch <- prometheus.MustNewConstHistogram(c.pinsPerAgent, uint64(pinned), float64(total), buckets)
}

// pinBuckets are the upper bounds (le) of carddrift_pins_per_agent; never
// modified.
var pinBuckets = []float64{1, 10, 100, 1000, 10000, 100000}
