package census

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a census as Prometheus gauges, taking one at most every
// MaxAge (a scrape in between reuses the last): agents whose replicas
// disagree, shared skills whose contracts differ, and the tasks pinned on
// each agent. Register it with the registry of the workers' metrics.
type Collector struct {
	take    func(ctx context.Context) (*Fleet, error)
	maxAge  time.Duration
	timeout time.Duration

	mu    sync.Mutex
	last  *Fleet
	taken time.Time

	inconsistentAgents *prometheus.Desc
	inconsistentSkills *prometheus.Desc
	agentPins          *prometheus.Desc
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
		agentPins: prometheus.NewDesc("carddrift_agent_pins",
			"Tasks pinned on each agent.", []string{"agent"}, nil),
		agents: prometheus.NewDesc("carddrift_agents",
			"Agents carddrift knows (a lease, a pin or an observation).", nil, nil),
		failed: prometheus.NewDesc("carddrift_census_errors",
			"1 when the last census could not be taken (the gauges are then the previous one's).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.inconsistentAgents, c.inconsistentSkills, c.agentPins, c.agents, c.failed} {
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
	for _, a := range f.Agents {
		ch <- prometheus.MustNewConstMetric(c.agentPins, prometheus.GaugeValue, float64(a.Pins()), a.AgentURL)
	}
}
