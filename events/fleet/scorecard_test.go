package fleet

import (
	"fmt"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

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
