package fleet

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

// skeleton is what a schedule decides, without the agents' addresses.
type skeleton struct {
	Index    int
	Scenario string
	Steps    []Step
	Profiles []Profile
	Expect   []Expectation
	Cards    [][]byte
}

func skeletonOf(sched []Assignment) []skeleton {
	var out []skeleton
	for _, as := range sched {
		host := []byte(as.Agent.host)
		sk := skeleton{Index: as.Agent.index, Scenario: as.Scenario, Steps: as.Steps, Profiles: as.Profiles, Expect: as.Expectations}
		for _, c := range as.Cards {
			sk.Cards = append(sk.Cards, bytes.ReplaceAll(c.Raw, host, []byte("HOST")))
		}
		out = append(out, sk)
	}
	return out
}

func TestScheduleSameSeedSameSchedule(t *testing.T) {
	const d = 30 * time.Second
	f := startFleet(t, Options{Seed: 11})
	a, err := Schedule(11, f.Agents(), nil, d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Schedule(11, f.Agents(), nil, d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("Schedule(11) twice on one fleet differs")
	}

	// Another fleet built from the same seed gets the same schedule, up to
	// its ports.
	g := startFleet(t, Options{Seed: 11})
	c, err := Schedule(11, g.Agents(), nil, d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skeletonOf(a), skeletonOf(c)) {
		t.Errorf("Schedule(11) on two fleets of seed 11 differs")
	}

	other, err := Schedule(12, f.Agents(), nil, d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(skeletonOf(a), skeletonOf(other)) {
		t.Errorf("seeds 11 and 12 give the same schedule")
	}
}

func TestScheduleCoversScenarios(t *testing.T) {
	f := startFleet(t, Options{Seed: 4})
	sched, err := Schedule(4, f.Agents(), nil, 20*time.Second, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	if len(sched) != len(f.Agents()) {
		t.Fatalf("%d assignments for %d agents", len(sched), len(f.Agents()))
	}
	count := map[string]int{}
	for i, as := range sched {
		if as.Agent != f.Agents()[i] || as.AgentID != as.Agent.ID() || as.AgentURL != as.Agent.URL() || as.CardURL != as.Agent.CardURL() {
			t.Errorf("assignment %d is for %s (%s), want agent %d", i, as.AgentID, as.AgentURL, i)
		}
		count[as.Scenario]++
		if as.Agent.Varies() && as.Scenario != Control {
			t.Errorf("the A2A-Version-varying agent got %s, want control", as.Scenario)
		}
		if as.Scenario == ModesWithoutVersionBump && as.Agent.Caching() != CacheVersion {
			t.Errorf("%s runs on a %s agent, want version-etag", as.Scenario, as.Agent.Caching())
		}
		if as.Scenario == Control && (len(as.Steps) != 1 || len(as.Cards) != 1 || !bytes.Equal(as.Card(LabelBase), as.Agent.base)) {
			t.Errorf("control %s: %d steps, %d cards, want its base card only", as.AgentID, len(as.Steps), len(as.Cards))
		}
		if len(as.Profiles) == 0 {
			t.Errorf("%s (%s): no task profiles", as.AgentID, as.Scenario)
		}
	}
	for _, name := range ScenarioNames() {
		if count[name] == 0 {
			t.Errorf("scenario %s not scheduled on a %d-agent fleet", name, len(f.Agents()))
		}
	}
	if want := len(f.Agents()) / 4; count[Control] < want {
		t.Errorf("control group of %d, want at least %d", count[Control], want)
	}
}

func TestScheduleSmallFleet(t *testing.T) {
	f := startFleet(t, Options{Agents: 3, Seed: 1})
	sched, err := Schedule(1, f.Agents(), []string{Flapping, AgentDown, SkillRemoved}, time.Minute, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, as := range sched {
		got = append(got, as.Scenario)
	}
	// One agent varies by A2A-Version and stays control; the other two get
	// the first scenarios, with no room for a control group.
	if slices.Index(got, Control) < 0 || len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s == Control })) != 2 {
		t.Errorf("scenarios = %v, want two scenarios and the varying agent as control", got)
	}
}

func TestScheduleErrors(t *testing.T) {
	f := startFleet(t, Options{Agents: 2})
	tests := []struct {
		name  string
		names []string
		d     time.Duration
		want  error
	}{
		{"unknown scenario", []string{"flapping", "bogus"}, time.Second, ErrUnknownScenario},
		{"zero duration", nil, 0, ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Schedule(1, f.Agents(), tt.names, tt.d, 0.75); !errors.Is(err, tt.want) {
				t.Errorf("Schedule error = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestPlayAppliesSteps plays a short schedule on a real fleet and checks
// that every agent ends up serving what its assignment says, at the right
// times, through HTTP.
func TestPlayAppliesSteps(t *testing.T) {
	const d = 600 * time.Millisecond
	f := startFleet(t, Options{Agents: 24, Seed: 21})
	sched, err := Schedule(21, f.Agents(), nil, d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Play(context.Background(), sched)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	// When Play returns, every agent serves its base card — unless its next
	// step already took effect (a loaded machine may read an agent after
	// its first step's offset).
	c := newClient(t)
	for _, as := range sched {
		_, body := get(t, c, as.CardURL)
		if bytes.Equal(body, as.Card(LabelBase)) {
			continue
		}
		moved := slices.ContainsFunc(p.Applied(), func(a Applied) bool { return a.Agent == as.AgentID && a.Step > 0 })
		if !moved {
			t.Errorf("%s (%s): not serving its base card when Play returned", as.AgentID, as.Scenario)
		}
	}

	select {
	case <-p.Done():
	case <-time.After(10 * d):
		t.Fatal("Player did not finish")
	}
	if err := p.Err(); err != nil {
		t.Fatalf("Player.Err() = %v", err)
	}

	steps := 0
	for _, as := range sched {
		steps += len(as.Steps)
		live := as.LiveAt(d)
		switch {
		case slices.Equal(live, []string{LabelDown}):
			t.Errorf("%s ends down", as.AgentID)
		case len(live) == 1:
			_, body := get(t, c, as.CardURL)
			if !bytes.Equal(body, as.Card(live[0])) {
				t.Errorf("%s (%s) does not end serving %s", as.AgentID, as.Scenario, live[0])
			}
		}
		if _, o := as.Agent.servedGen(); o != Up {
			t.Errorf("%s ends %s", as.AgentID, o)
		}
	}
	applied := p.Applied()
	if len(applied) != steps {
		t.Fatalf("%d steps applied, want %d", len(applied), steps)
	}
	for i, ap := range applied {
		if ap.Err != nil {
			t.Errorf("step %s/%d: %v", ap.Agent, ap.Step, ap.Err)
		}
		if early := p.Start().Add(ap.Spec.At).Sub(ap.At); early > 5*time.Millisecond {
			t.Errorf("step %s/%d applied %v early", ap.Agent, ap.Step, early)
		}
		if i > 0 && ap.At.Before(applied[i-1].At) {
			t.Errorf("steps applied out of order")
		}
	}
}

// TestPlayOutageAndReplicas watches an agent-down and a rolling-deploy
// assignment through HTTP while they play.
func TestPlayOutageAndReplicas(t *testing.T) {
	const d = 3 * time.Second
	f := startFleet(t, Options{Agents: 8, Seed: 3})
	sched, err := Schedule(3, f.Agents(), []string{AgentDown, RollingDeploy}, d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(name string) int {
		return slices.IndexFunc(sched, func(as Assignment) bool { return as.Scenario == name })
	}
	down, roll := sched[idx(AgentDown)], sched[idx(RollingDeploy)]

	p, err := f.Play(context.Background(), sched)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c := newClient(t)
	c.Timeout = 500 * time.Millisecond

	// Middle of the outage, and of the rolling deploy.
	waitUntil(t, p, down.Steps[1].At+(down.Steps[2].At-down.Steps[1].At)/2)
	resp, err := c.Get(down.CardURL)
	if err == nil {
		resp.Body.Close()
	}
	switch down.Steps[1].Outage {
	case Refused:
		if err == nil {
			t.Errorf("agent-down (refused): GET succeeded with %d", resp.StatusCode)
		}
	case Unavailable:
		if err != nil || resp.StatusCode != 503 {
			t.Errorf("agent-down (unavailable): GET = %v, %v, want 503", resp, err)
		}
	}

	waitUntil(t, p, roll.Steps[1].At+(roll.Steps[2].At-roll.Steps[1].At)/2)
	var labels []string
	for range 4 {
		_, body := get(t, c, roll.CardURL)
		switch {
		case bytes.Equal(body, roll.Card(LabelBase)):
			labels = append(labels, LabelBase)
		case bytes.Equal(body, roll.Card("next")):
			labels = append(labels, "next")
		}
	}
	if time.Now().After(p.Start().Add(roll.Steps[2].At)) {
		// A loaded machine read some of them after the deploy ended: what
		// they show says nothing about the deploy.
		t.Logf("the reads ended after the rolling deploy (%v): not judged", labels)
	} else if !slices.Contains(labels, LabelBase) || !slices.Contains(labels, "next") || len(labels) != 4 {
		t.Errorf("during the rolling deploy the agent served %v, want both replicas", labels)
	}

	<-p.Done()
	if resp, _ := get(t, c, down.CardURL); resp.StatusCode != 200 {
		t.Errorf("agent-down after the outage: %d, want 200", resp.StatusCode)
	}
}

// waitUntil sleeps until offset d of the player's schedule.
func waitUntil(t *testing.T, p *Player, d time.Duration) {
	t.Helper()
	time.Sleep(time.Until(p.Start().Add(d)))
}

func TestPlayStopsOnContext(t *testing.T) {
	f := startFleet(t, Options{Agents: 4, Seed: 1})
	sched, err := Schedule(1, f.Agents(), nil, time.Hour, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := f.Play(ctx, sched)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Errorf("Player.Err() after cancel = %v, want nil", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Player did not stop after cancel")
	}

	p, err = f.Play(context.Background(), sched)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	p.Stop()
	if len(p.Applied()) != len(sched) {
		t.Errorf("%d steps applied before Stop, want only the %d base cards", len(p.Applied()), len(sched))
	}
}

func TestPlayRejectsUnknownLabel(t *testing.T) {
	f := startFleet(t, Options{Agents: 2, Seed: 1})
	sched, err := Schedule(1, f.Agents(), nil, time.Second, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	sched[0].Steps = append(sched[0].Steps, Step{At: time.Millisecond, Card: "nope"})
	if _, err := f.Play(context.Background(), sched); !errors.Is(err, ErrUnknownLabel) {
		t.Errorf("Play error = %v, want ErrUnknownLabel", err)
	}
}

func TestExpectDigests(t *testing.T) {
	f := startFleet(t, Options{Agents: 6, Seed: 2})
	sched, err := Schedule(2, f.Agents(), []string{SkillRemoved}, time.Minute, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	as := &sched[slices.IndexFunc(sched, func(as Assignment) bool { return as.Scenario == SkillRemoved })]
	base, _ := as.Version(LabelBase)
	removed, _ := as.Version("removed")
	tests := []struct {
		name         string
		profile      string
		pinned, live string
		want         Outcome
		wantOK       bool
	}{
		{"removed skill aborts", "plain", base.Digest, removed.Digest, OutcomeAbort, true},
		{"other skill continues", "other", base.Digest, removed.Digest, OutcomeContinue, true},
		{"same card", "plain", base.Digest, base.Digest, OutcomeNone, true},
		{"unknown digest", "plain", base.Digest, "sha256:00", "", false},
		{"never served in that order", "other", removed.Digest, base.Digest, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := as.ExpectDigests(tt.profile, tt.pinned, tt.live)
			if ok != tt.wantOK || e.Outcome != tt.want {
				t.Errorf("ExpectDigests(%s) = %s, %v, want %s, %v", tt.profile, e.Outcome, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestScenariosAreCopies(t *testing.T) {
	s, _ := LookupScenario(PinningRotation)
	s.Expect[0].Outcome = "changed"
	s.Expect[0].Rules[0] = "changed"
	if again, _ := LookupScenario(s.Name); again.Expect[0].Outcome == "changed" || again.Expect[0].Rules[0] == "changed" {
		t.Errorf("changing a returned Scenario changed the library")
	}
}
