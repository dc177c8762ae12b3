package fleet

import (
	"slices"
	"testing"
	"time"
)

// TestPlanIsTheTraffic holds the traffic's cached answers to what a fresh
// plan computes from scratch: for every assignment of a 60-agent schedule
// (every scenario), every card label, every profile's skill and every media
// type the cards produce, streamMethod, artifactType, declares and the live
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
			if got, want := pl.streamMethod(c.Label), fresh.streamMethod(c.Label); got != want {
				t.Errorf("%s %s: streamMethod = %q, want %q", as.AgentID, c.Label, got, want)
			}
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
