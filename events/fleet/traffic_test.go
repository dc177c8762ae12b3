package fleet

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/natstest"
)

// lifecycleJetStream is an embedded JetStream with a stream for the
// lifecycle subjects.
func lifecycleJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "A2A", Subjects: []string{events.InboundSubjects}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	return js
}

// TestTrafficHold: while Hold says so, no task starts (nothing is
// published: the publisher here has no methods) and Held counts the
// agents' tries.
func TestTrafficHold(t *testing.T) {
	f := startFleet(t, Options{Agents: 2, Seed: 1})
	sched, err := Schedule(1, f.Agents(), ScenarioNames()[:1], 10*time.Second, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTraffic(TrafficOptions{
		JetStream: noPublisher{}, Schedule: sched, Start: time.Now(), Duration: 10 * time.Second,
		TaskEvery: 50 * time.Millisecond, StepEvery: 10 * time.Millisecond, Steps: 1,
		Hold: func() bool { return true }, HoldPoll: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	tr.Run(ctx)
	if n := len(tr.Tasks()); n != 0 || tr.Sent() != 0 || tr.Errors() != 0 {
		t.Errorf("held traffic started %d tasks and published %d events (%d errors), want none", n, tr.Sent(), tr.Errors())
	}
	if tr.Held() == 0 {
		t.Error("Held() = 0 after holding every task")
	}
}

// noPublisher is a jetstream.Publisher without methods: a publish panics.
type noPublisher struct{ jetstream.Publisher }

// Every agent runs one spanning task from the start of the run until
// shortly before its end, whatever Hold says: a task planned on the card
// served before a scenario's change that still runs when the change has
// settled, so that no scenario depends on a short task meeting its change
// by chance (TestDemoScorecard's rolling deploy once went unexercised
// while carddrift kept up).
func TestTrafficSpanningTasks(t *testing.T) {
	f := startFleet(t, Options{Agents: 3, Seed: 1})
	const d = 3 * time.Second
	sched, err := Schedule(1, f.Agents(), ScenarioNames()[:1], d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Play(t.Context(), sched)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	start := p.Start()
	tr, err := NewTraffic(TrafficOptions{
		JetStream: lifecycleJetStream(t), Schedule: sched, Start: start, Duration: d,
		TaskEvery: 100 * time.Millisecond, StepEvery: 10 * time.Millisecond, SpanStepEvery: 40 * time.Millisecond,
		Hold: func() bool { return true }, Spanning: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr.Run(t.Context())
	tasks := tr.Tasks()
	if len(tasks) != len(sched) {
		t.Fatalf("%d tasks with every short task held, want one spanning task per agent (%d)", len(tasks), len(sched))
	}
	for _, as := range sched {
		var span *Task
		for _, tk := range tasks {
			if tk.AgentURL == as.AgentURL {
				span = tk
			}
		}
		if span == nil || !strings.HasSuffix(span.ID, "-span") {
			t.Fatalf("agent %s: spanning task %+v, want one whose id ends in -span", as.AgentID, span)
		}
		first, last := span.Events[0], span.Events[len(span.Events)-1]
		// Submitted in the first TaskEvery (bounds generous for a loaded
		// machine), it steps until 3 × SpanStepEvery before the end, then
		// completes after one more pause.
		if first.Type != events.TypeSubmitted || first.At.Sub(start) > d/2 {
			t.Errorf("%s: first event %s at %s, want the submission at the start", span.ID, first.Type, first.At.Sub(start))
		}
		if last.Type != events.TypeStatus || last.At.Sub(start) < d-120*time.Millisecond {
			t.Errorf("%s: last event %s at %s, want its completion no earlier than 120ms before the end (%s)", span.ID, last.Type, last.At.Sub(start), d)
		}
		if len(span.Events) < 10 {
			t.Errorf("%s: %d events over %s, want it to step throughout", span.ID, len(span.Events), d)
		}
	}
}

// TestPlanIsTheTraffic holds the traffic's cached answers to what a fresh
// plan computes from scratch: for every assignment of a 60-agent schedule
// (every scenario), every card label, every profile's skill and every media
// type the cards produce, artifactType, declares and the live
// labels of a plan kept across the agent's changes (SetCard, SetReplicas,
// outages) equal those of a plan made after the change.
func TestPlanIsTheTraffic(t *testing.T) {
	f := startFleet(t, Options{Agents: 60, Seed: 4})
	schedule, err := Schedule(4, f.Agents(), nil, time.Minute, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	check := func(as *Assignment, pl *plan, when string) {
		t.Helper()
		fresh := newPlan(as)
		if live, want := pl.liveLabels(), fresh.liveLabels(); !slices.Equal(live, want) {
			t.Fatalf("%s %s: live labels %v, fresh plan %v", as.AgentID, when, live, want)
		}
		types := map[string]bool{"text/plain": true, "application/octet-stream": true}
		for _, c := range as.Cards {
			for _, p := range as.Profiles {
				skill := p.Task.SkillID
				got, want := pl.artifactType(c.Label, skill), fresh.artifactType(c.Label, skill)
				if got != want {
					t.Errorf("%s %s %s %s: artifactType = %q, want %q", as.AgentID, when, c.Label, skill, got, want)
				}
				types[want] = true
				compared++
			}
		}
		for _, c := range as.Cards {
			for _, p := range as.Profiles {
				for mt := range types {
					if got, want := pl.declares(c.Label, p.Task.SkillID, mt), fresh.declares(c.Label, p.Task.SkillID, mt); got != want {
						t.Errorf("%s %s %s %s: declares = %v, want %v", as.AgentID, c.Label, p.Task.SkillID, mt, got, want)
					}
					compared++
				}
			}
		}
	}
	for i := range schedule {
		as := &schedule[i]
		pl := newPlan(as)
		check(as, pl, "at start")
		for _, c := range as.Cards {
			as.Agent.SetCard(c.Raw)
			check(as, pl, "serving "+c.Label)
		}
		if len(as.Cards) > 1 {
			as.Agent.SetReplicas(as.Cards[0].Raw, as.Cards[len(as.Cards)-1].Raw)
			check(as, pl, "rolling deploy")
		}
		as.Agent.setOutage(Unavailable)
		check(as, pl, "unavailable")
		as.Agent.setOutage(Up)
		check(as, pl, "up again")
	}
	if compared < 1000 {
		t.Errorf("only %d answers compared", compared)
	}
	t.Logf("%d answers compared", compared)
}
