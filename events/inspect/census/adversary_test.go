package census_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/fetcher"
)

// fakeAgents is how many agent URLs the adversary of
// TestAdversaryMetricLabels makes up.
const fakeAgents = 10_000

// TestAdversaryMetricLabels is issue 19's row 9, as a publisher would do
// it: any client allowed to publish lifecycle events submits tasks for
// 10,000 agent URLs it made up (each with a client card, so nothing is
// fetched), the workers pin them all, and /metrics — the workers'
// collectors and the census, in one registry as serve has them — is
// scraped before and after. The number of series must not move: no label
// of carddrift's metrics takes its values from publishers.
func TestAdversaryMetricLabels(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := r.Metrics
	reg.MustRegister(m.Events, m.Fetches, m.Drift, m.Published, m.DeadLetters, m.EventTime, m.FetchTime)
	src := fresh(r.JS, r.Config, r.Stores, r.Stores.Cards)
	// Every scrape takes a census to the end: the collector's own timeout
	// (10 s) would, on a loaded machine, serve the previous census of 10
	// pins after 10,000 — the labels are under test, not that timeout.
	reg.MustRegister(census.NewCollector(func(ctx context.Context) (*census.Fleet, error) {
		return census.Take(context.WithoutCancel(ctx), src, census.Options{})
	}, time.Nanosecond))

	// Publish submissions for agents [from, to) from 8 publishers at once
	// and wait until every one is handled.
	submit := func(from, to int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for p := range 8 {
			wg.Go(func() {
				for i := from + p; i < to; i += 8 {
					agent := fmt.Sprintf("https://fake-%05d.attacker.example", i)
					err := r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprintf("t%05d", i), AgentURL: agent, SkillID: "summarize",
						Card: []byte(strings.ReplaceAll(servicetest.WriteupT0, "AGENT", agent))})
					if err == nil {
						// Each publisher waits for its event to be stored, at
						// the pace the workers keep up with: a burst beyond it
						// would be redelivered and add outcomes (retry, stale)
						// that these counts do not expect.
						err = r.Emit.Flush(ctx)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Every submission handled and acknowledged (a count of handled ones
		// would count twice one redelivered while the burst is worked off).
		r.Drained(t, 4*time.Minute)
	}

	submit(0, 10)
	before, pins := series(t, reg)
	if pins != 10 {
		t.Fatalf("after 10 agents the census counts %v pinned tasks, want 10", pins)
	}
	submit(10, fakeAgents)
	after, pins := series(t, reg)
	if pins != fakeAgents {
		t.Fatalf("after %d agents the census counts %v pinned tasks", fakeAgents, pins)
	}
	t.Logf("series: %d after 10 fake agents, %d after %d", before, after, fakeAgents)
	if after != before {
		t.Errorf("series = %d after %d fake agents, %d after 10: a label takes its values from publishers", after, fakeAgents, before)
	}
}

// series scrapes reg and returns the number of series its exposition holds
// (a histogram is one per bucket, +Inf, sum and count) and the pinned tasks
// the census exported (carddrift_pins, or on e91b0a3 the sum of
// carddrift_agent_pins).
func series(t *testing.T, reg *prometheus.Registry) (int, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	n, pins := 0, 0.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				n += len(m.GetHistogram().GetBucket()) + 3
			default:
				n++
			}
			switch mf.GetName() {
			case "carddrift_pins", "carddrift_agent_pins":
				pins += m.GetGauge().GetValue()
			}
		}
	}
	return n, pins
}

// TestAdversaryFetchStatusLabels: an agent's card endpoint is the
// attacker's too. One that answers every fetch with another 2xx status
// (200, 201, … 229), card and all (but 204's body is dropped), must not mint a series of
// carddrift_fetches_total per status: result is 200 or 304 (or an
// unreachable reason), whatever the agent says.
func TestAdversaryFetchStatusLabels(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	var requests atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != fetcher.WellKnownPath {
			http.NotFound(w, req)
			return
		}
		n := requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200 + int(n-1)%30)
		w.Write([]byte(strings.ReplaceAll(servicetest.WriteupT0, "AGENT", srv.URL)))
	}))
	t.Cleanup(srv.Close)
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "t1", AgentURL: srv.URL, SkillID: "summarize"}))
	r.Eventually("the pin", func() bool { return requests.Load() >= 1 })
	r.Drained(t, servicetest.WaitTimeout)
	for i := range 30 {
		n := requests.Load()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "t1", AgentURL: srv.URL, Method: "message/stream", Attempt: 1}))
		r.Eventually(fmt.Sprintf("fetch %d", i+2), func() bool { return requests.Load() > n })
		r.Drained(t, servicetest.WaitTimeout)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Metrics.Fetches)
	mfs, err := reg.Gather()
	must(t, err)
	var results []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				results = append(results, l.GetValue())
			}
		}
	}
	t.Logf("%d fetches with %d statuses; carddrift_fetches_total results %v", requests.Load(), min(requests.Load(), 30), results)
	allowed := map[string]bool{"200": true, "304": true, "error": true}
	for _, reason := range fetcher.Reasons() {
		allowed[string(reason)] = true
	}
	for _, res := range results {
		if !allowed[res] {
			t.Errorf("carddrift_fetches_total{result=%q}: the agent's status became a label value", res)
		}
	}
}
