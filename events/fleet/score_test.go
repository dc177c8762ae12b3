package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
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

// TestScoreNamesTheObservation: a false abort in the scorecard names the pin
// and the live observation the verdict used (digest, label, time), so that a
// stale observation (fetched before the pin) is visible from the scorecard
// alone — the shape of the 400-agent demo's false aborts.
func TestScoreNamesTheObservation(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	as := changeAndBack(PinningRotation, "rotated")
	pinAt, obsAt := start.Add(2*time.Second), start.Add(time.Second) // the observation predates the pin
	drift := events.Drift{
		TaskID: "t1", AgentURL: as.AgentURL,
		Pinned:  events.CardRef{Digest: "sha256:rotated", FetchedAt: pinAt},
		Live:    events.CardRef{Digest: "sha256:base", FetchedAt: obsAt},
		Verdict: detector.Verdict{Action: detector.Abort},
		Trigger: events.Trigger{EventID: "e1"},
	}
	sc := Score(ScoreInput{
		Schedule: []Assignment{as}, Start: start, Duration: time.Minute,
		Tasks: map[string]*Task{"t1": {ID: "t1", AgentURL: as.AgentURL, Profile: Profile{Name: "p"},
			PlannedLabel: "rotated", PinSource: events.PinClientCard}},
		Received: []Received{
			{Event: events.Event{Data: events.Pinned{TaskID: "t1", AgentURL: as.AgentURL, Digest: "sha256:rotated", Source: events.PinClientCard}}, At: pinAt},
			{Event: events.Event{Data: drift}, At: start.Add(3 * time.Second)},
		},
		Lease: func(*Agent) time.Duration { return time.Second },
	})
	if sc.FalseAborts != 1 || len(sc.Problems) != 1 {
		t.Fatalf("false aborts %d, problems %+v, want one false abort", sc.FalseAborts, sc.Problems)
	}
	p := sc.Problems[0]
	if p.PinnedCard == nil || p.PinnedCard.Label != "rotated" || !p.PinnedCard.At.Equal(pinAt) {
		t.Errorf("PinnedCard = %+v, want rotated at %s", p.PinnedCard, pinAt)
	}
	if p.Observation == nil || p.Observation.Label != LabelBase || p.Observation.Digest != "sha256:base" || !p.Observation.At.Equal(obsAt) {
		t.Errorf("Observation = %+v, want base at %s", p.Observation, obsAt)
	}
}

// TestScoreUnknownPinAbort: a task pinned by a client digest of a card
// carddrift never saw gets pinned-card-unknown against any other live card,
// and fail-closed aborts it (the contract), although the scenario's table —
// which knows both bodies — would continue: not a false abort.
func TestScoreUnknownPinAbort(t *testing.T) {
	sc := scoreUnknownPin(t, detector.Requirements{SkillID: "s", Posture: detector.FailClosed})
	if sc.FalseAborts != 0 {
		t.Fatalf("false aborts = %d (%+v), want 0: the abort is the contract's for an unknown pinned body", sc.FalseAborts, sc.Problems)
	}
}

// TestScoreUnknownPinNotTheCoresVerdict: the unknown pin excuses only the
// verdict the core gives (task.Decide): an idempotent degrade task whose
// skill the live card offers is re-planned, not aborted, so an abort of it
// is a false abort.
func TestScoreUnknownPinNotTheCoresVerdict(t *testing.T) {
	sc := scoreUnknownPin(t, detector.Requirements{SkillID: "s", Posture: detector.Degrade, Idempotent: true})
	if sc.FalseAborts != 1 {
		t.Fatalf("false aborts = %d (%+v), want 1: the core re-plans this task", sc.FalseAborts, sc.Problems)
	}
}

// scoreUnknownPin scores one abort of a task with requirements req, pinned
// by a client digest of a card carddrift never saw, while the agent serves
// its base card (which the scenario's table says continues the task).
func scoreUnknownPin(t *testing.T, req detector.Requirements) Scorecard {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := []byte(`{"name":"a","url":"http://127.0.0.1:1/a2a","capabilities":{"streaming":true},"skills":[{"id":"s","name":"S"}]}`)
	as := Assignment{
		AgentURL: "http://127.0.0.1:1", Scenario: "flapping",
		Cards:        []CardVersion{{Label: LabelBase, Digest: "sha256:base", Raw: base}, {Label: "flipped", Digest: "sha256:flipped"}},
		Profiles:     []Profile{{Name: "plain", Task: req}},
		Expectations: []Expectation{{Profile: "plain", From: "flipped", To: LabelBase, Outcome: OutcomeContinue}},
	}
	drift := events.Drift{
		TaskID: "t1", AgentURL: as.AgentURL,
		Pinned:   events.CardRef{Digest: "sha256:flipped"}, // no fingerprint: carddrift never saw it
		Live:     events.CardRef{Digest: "sha256:base", Fingerprint: "sha256:x"},
		Findings: []detector.Finding{{Rule: detector.RulePinnedCardUnknown, Severity: detector.Breaking, Touches: true}},
		Verdict:  detector.Verdict{Action: detector.Abort},
	}
	return Score(ScoreInput{
		Schedule: []Assignment{as}, Start: start, Duration: time.Minute,
		Tasks: map[string]*Task{"t1": {ID: "t1", AgentURL: as.AgentURL, Profile: as.Profiles[0],
			PlannedLabel: "flipped", PinSource: events.PinClientDigest}},
		Received: []Received{{Event: events.Event{Data: drift}, At: start.Add(time.Second)}},
		Lease:    func(*Agent) time.Duration { return time.Second },
	})
}

// TestScoreSplitBrainJudgedByFetches: a split brain is expected to be
// reported only when carddrift fetched the card from the rotation of
// replicas often enough to see them alternate (Agent.Rotated), not merely
// because the traffic sent transitions during the split: a worker that
// handles them after the split (a backlog on a loaded machine, the demo at
// load 25) fetches one card. Then it is missed without card.inconsistent.
func TestScoreSplitBrainJudgedByFetches(t *testing.T) {
	f := startFleet(t, Options{Agents: 4, Seed: 1})
	c := newClient(t)
	a := agentWhere(t, f, "without an ETag", func(a *Agent) bool { return a.Caching() == CacheNone && !a.Varies() })
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	as := Assignment{
		AgentURL: a.URL(), Scenario: SplitBrain, Agent: a,
		Cards: []CardVersion{{Label: LabelBase, Digest: "sha256:base"}, {Label: "stale", Digest: "sha256:stale"}},
		Steps: []Step{{At: 0, Card: LabelBase}, {At: 5 * time.Second, Replicas: []string{LabelBase, "stale"}},
			{At: 50 * time.Second, Card: LabelBase}},
	}
	task := &Task{ID: "t1", AgentURL: as.AgentURL, PlannedLabel: LabelBase, PinSource: events.PinClientCard}
	for i := range 10 {
		task.Events = append(task.Events, SentEvent{ID: fmt.Sprintf("e%d", i), At: start.Add(time.Duration(10+i) * time.Second), Capability: true})
	}
	score := func() SplitBrainScore {
		return Score(ScoreInput{
			Schedule: []Assignment{as}, Start: start, Duration: time.Minute,
			Tasks: map[string]*Task{"t1": task},
			Lease: func(*Agent) time.Duration { return time.Second },
		}).SplitBrain
	}
	if got := score(); got != (SplitBrainScore{}) {
		t.Errorf("no fetch from the rotation: split brain %+v, want nothing injected", got)
	}
	a.SetReplicas(a.Served()[0], append(a.Served()[0], ' '))
	for range SplitVisible {
		get(t, c, a.CardURL())
	}
	if got := score(); got != (SplitBrainScore{Injected: 1, Missed: 1}) {
		t.Errorf("%d fetches from the rotation, no card.inconsistent: split brain %+v, want injected and missed", SplitVisible, got)
	}
}

// TestScoreLagIsTheRunsLatency: a transition counts as an exposure only
// when the card it met stayed so for as long as carddrift took to handle
// transitions in the run (p99 verdict latency, at least 1s): a change
// undone 2s later, in a run whose verdicts came 5s after their events, is
// not one carddrift could have seen (the flapping miss of the demo under
// load). With a Lag of 1s it is an exposure, and missed.
func TestScoreLagIsTheRunsLatency(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	as := changeAndBack(Flapping, "flipped")
	as.Steps = []Step{{At: 0, Card: LabelBase}, {At: 10 * time.Second, Card: "flipped"}, {At: 12 * time.Second, Card: LabelBase}}
	tasks := map[string]*Task{
		"t1": {ID: "t1", AgentURL: as.AgentURL, Profile: Profile{Name: "p"}, PlannedLabel: LabelBase,
			PinSource: events.PinClientCard, Events: []SentEvent{{ID: "t1/2", At: start.Add(10500 * time.Millisecond), Capability: true}}},
		"t2": {ID: "t2", AgentURL: as.AgentURL, Profile: Profile{Name: "p"}, PlannedLabel: LabelBase,
			PinSource: events.PinClientCard, Events: []SentEvent{{ID: "t2/2", At: start.Add(time.Second), Capability: true}}},
	}
	received := []Received{
		{Event: events.Event{Data: events.Pinned{TaskID: "t1", AgentURL: as.AgentURL, Digest: "sha256:base"}}, At: start},
		// t2's verdict comes 5s after its event: the run's latency.
		{Event: events.Event{Data: events.Drift{TaskID: "t2", AgentURL: as.AgentURL, Verdict: detector.Verdict{Action: detector.Continue},
			Trigger: events.Trigger{EventID: "t2/2"}}}, At: start.Add(6 * time.Second)},
	}
	for _, tc := range []struct {
		lag    time.Duration
		missed int
	}{{0, 0}, {time.Second, 1}} {
		sc := Score(ScoreInput{Schedule: []Assignment{as}, Start: start, Duration: time.Minute, Tasks: tasks,
			Received: received, Lease: func(*Agent) time.Duration { return time.Second }, Lag: tc.lag})
		if sc.Missed != tc.missed {
			t.Errorf("Lag %v: missed %d, want %d (problems %+v)", tc.lag, sc.Missed, tc.missed, sc.Problems)
		}
	}
}

// changeAndBack is an assignment of scenario with the base card and a
// changed one: profile p aborts on the change and continues on the way back.
func changeAndBack(scenario, changed string) Assignment {
	return Assignment{
		AgentURL: "http://127.0.0.1:1", Scenario: scenario,
		Cards:    []CardVersion{{Label: LabelBase, Digest: "sha256:base"}, {Label: changed, Digest: "sha256:" + changed}},
		Profiles: []Profile{{Name: "p"}},
		Expectations: []Expectation{
			{Profile: "p", From: LabelBase, To: changed, Outcome: OutcomeAbort},
			{Profile: "p", From: changed, To: LabelBase, Outcome: OutcomeContinue},
		},
	}
}
