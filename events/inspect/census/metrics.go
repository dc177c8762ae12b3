package census

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a census as Prometheus gauges, taking one at most every
// maxAge (a scrape in between reuses the last). No series is labelled with
// a value a publisher chose: the pins per agent are a histogram, and each
// agent's count is on /fleet and in carddrift fleet.
type Collector struct {
	take    func(ctx context.Context) (*Fleet, error)
	maxAge  time.Duration
	timeout time.Duration

	mu    sync.Mutex
	last  *Fleet
	taken time.Time
}

var (
	inconsistentAgentsDesc = prometheus.NewDesc("carddrift_agents_inconsistent",
		"Agents whose replicas disagree now (split brain: the live card alternates within the consistency window).", nil, nil)
	inconsistentSkillsDesc = prometheus.NewDesc("carddrift_skills_inconsistent",
		"Skill ids several agents offer with different contracts (modes, streaming, push or security).", nil, nil)
	pinsDesc = prometheus.NewDesc("carddrift_pins",
		"Tasks pinned now.", nil, nil)
	pinsPerAgentDesc = prometheus.NewDesc("carddrift_pins_per_agent",
		"Agents by the number of tasks pinned on them (agents with no pinned task are not observed; the count of each agent is on /fleet).", nil, nil)
	agentsDesc = prometheus.NewDesc("carddrift_agents",
		"Agents carddrift knows (a lease, a pin or an observation).", nil, nil)
	failedDesc = prometheus.NewDesc("carddrift_census_errors",
		"1 when the last census could not be taken (the gauges are then the previous one's).", nil, nil)
)

// NewCollector returns a Collector over take (for example a closure over
// Take and its Source), caching a census for maxAge (default 15s).
func NewCollector(take func(ctx context.Context) (*Fleet, error), maxAge time.Duration) *Collector {
	if maxAge <= 0 {
		maxAge = 15 * time.Second
	}
	return &Collector{take: take, maxAge: maxAge, timeout: 10 * time.Second}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{inconsistentAgentsDesc, inconsistentSkillsDesc, pinsDesc, pinsPerAgentDesc, agentsDesc, failedDesc} {
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
	ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.GaugeValue, float64(b2i(err != nil)))
	if f == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(inconsistentAgentsDesc, prometheus.GaugeValue, float64(f.SplitBrains()))
	ch <- prometheus.MustNewConstMetric(inconsistentSkillsDesc, prometheus.GaugeValue, float64(f.InconsistentSkills()))
	ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(len(f.Agents)))
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
	ch <- prometheus.MustNewConstMetric(pinsDesc, prometheus.GaugeValue, float64(total))
	ch <- prometheus.MustNewConstHistogram(pinsPerAgentDesc, uint64(pinned), float64(total), buckets)
}

// pinBuckets are the upper bounds (le) of carddrift_pins_per_agent.
var pinBuckets = []float64{1, 10, 100, 1000, 10000, 100000}
