package worker_test

import (
	"context"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
)

// TestSplitBrain drives a streaming task through capability-dependent
// transitions while its agent serves the write-up's two cards in turn. The
// agent answers no-cache, so every transition is one fetch, shared by two
// workers through the lease: an alternation (A→B→A→B) publishes one
// card.inconsistent and, while it lasts, card.drift carries
// replicas-disagree; a rolling deploy (A→B, never back) and a single flip
// and back publish none.
func TestSplitBrain(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1", "w2"}})
	ctx := context.Background()
	a, b := servicetest.WriteupT0, servicetest.WriteupT40
	run := func(t *testing.T, task string, agent *servicetest.Agent, seq []string) {
		t.Helper()
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: agent.Served(a)}))
		r.Eventually("the pin", func() bool { return len(r.Out().Events(events.TypePinned, task)) == 1 })
		for _, card := range seq {
			agent.Set(card)
			before := agent.Requests()
			must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
			r.Eventually("the transition's fetch and verdict", func() bool { return agent.Requests() > before })
			r.Drained(t, servicetest.WaitTimeout)
		}
	}
	inconsistent := func(agent *servicetest.Agent) []events.Inconsistent {
		var out []events.Inconsistent
		for _, ev := range r.Out().All(events.TypeInconsistent) {
			if d := ev.Data.(events.Inconsistent); d.AgentURL == agent.URL() {
				out = append(out, d)
			}
		}
		return out
	}
	carries := func(d events.Drift) bool {
		return slices.ContainsFunc(d.Findings, func(f detector.Finding) bool { return f.Rule == detector.RuleReplicasDisagree })
	}

	t.Run("alternation is split brain", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "split", agent, []string{b, a, b, a, b})
		r.Out().WaitFor(t, "one card.inconsistent", func(c *servicetest.Collector) bool { return len(inconsistent(agent)) == 1 })
		got := inconsistent(agent)[0]
		if len(got.Digests) != 2 || got.Window != events.Duration(2*60e9) || got.CardURL != agent.URL()+"/.well-known/agent-card.json" {
			t.Errorf("card.inconsistent = %+v", got)
		}
		drifts := r.Out().Drifts("split")
		if len(drifts) != 2 || carries(drifts[0]) || !carries(drifts[1]) {
			t.Fatalf("card.drift = %d, want the first without replicas-disagree and one with it once the episode began: %+v", len(drifts), drifts)
		}
		if drifts[1].Verdict.Action != detector.Abort {
			t.Errorf("a warning changed the verdict: %+v", drifts[1].Verdict)
		}

		// Restarts and crashes: other workers carry on, the episode is
		// reported already; a worker that published but crashed before
		// marking it publishes the same event again, which the stream drops.
		lease, rev, err := r.Stores.Leases.Get(ctx, got.CardURL)
		must(t, err)
		if !lease.Replicas.Reported {
			t.Fatalf("episode not marked on the lease: %+v", lease.Replicas)
		}
		lease.Replicas.Reported = false
		_, err = r.Stores.Leases.Update(ctx, lease, rev)
		must(t, err)
		stop := r.StartWorker("w3", nil)
		run(t, "split-2", agent, []string{a, b})
		stop()
		dup := published(t, r.Metrics, events.TypeInconsistent, "duplicate")
		if n := len(inconsistent(agent)); n != 1 || dup < 1 {
			t.Errorf("after a restart and a lost mark: %d card.inconsistent in the stream (%v duplicates dropped), want 1", n, dup)
		}
	})
	t.Run("rolling deploy is not", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "rolling", agent, []string{a, a, b, b, b})
		drifts := r.Out().Drifts("rolling")
		if len(drifts) != 1 || carries(drifts[0]) {
			t.Errorf("card.drift = %+v, want one without replicas-disagree", drifts)
		}
		if n := len(inconsistent(agent)); n != 0 {
			t.Errorf("%d card.inconsistent for a rolling deploy", n)
		}
	})
	t.Run("single flip and back is not", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "flip", agent, []string{a, b, b, a, a})
		if n := len(inconsistent(agent)); n != 0 {
			t.Errorf("%d card.inconsistent for a single flip", n)
		}
		if drifts := r.Out().Drifts("flip"); len(drifts) != 1 || carries(drifts[0]) {
			t.Errorf("card.drift = %+v, want one without replicas-disagree", drifts)
		}
	})
}

// published reads carddrift_published_total{type,result}.
func published(t *testing.T, m *worker.Metrics, typ, result string) float64 {
	var v dto.Metric
	if err := m.Published.WithLabelValues(typ, result).Write(&v); err != nil {
		t.Fatal(err)
	}
	return v.GetCounter().GetValue()
}
