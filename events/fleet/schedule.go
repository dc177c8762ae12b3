package fleet

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Schedule assigns scenarios (names; empty: all) to started agents,
// deterministically from seed (cards differ only in the agents' ports), and
// returns one Assignment per agent, in agent order. share of the agents (the
// demo's is three quarters) get the scenarios in turn, each at least once
// when there are enough, preferring the agents a scenario prefers; the
// others, always with the agent that varies its card by A2A-Version, form the
// control group. All changes happen between a fifth and 95% of duration.
func Schedule(seed int64, agents []*Agent, names []string, duration time.Duration, share float64) ([]Assignment, error) {
	if share < 0 || share > 1 {
		return nil, fmt.Errorf("%w: drift share %v", ErrInvalidOptions, share)
	}
	if duration <= 0 {
		return nil, fmt.Errorf("%w: duration %v", ErrInvalidOptions, duration)
	}
	if len(names) == 0 {
		names = ScenarioNames()
	}
	var scs []Scenario
	for _, n := range names {
		s, ok := LookupScenario(n)
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownScenario, n)
		}
		scs = append(scs, s)
	}
	for _, a := range agents {
		if a.host == "" {
			return nil, fmt.Errorf("%w: agent %s", ErrNotStarted, a.id)
		}
	}

	rng := rand.New(rand.NewPCG(uint64(seed), 0x5c4ed))
	var eligible []*Agent
	for _, a := range agents {
		if !a.Varies() {
			eligible = append(eligible, a)
		}
	}
	rng.Shuffle(len(eligible), func(i, j int) { eligible[i], eligible[j] = eligible[j], eligible[i] })
	control := len(agents) - int(share*float64(len(agents))+0.5)
	control = max(0, min(control, len(eligible)-len(scs)))
	slots := len(eligible) - control

	chosen := map[*Agent]Scenario{}
	free := slices.Clone(eligible)
	for k := range slots {
		s := scs[k%len(scs)]
		i := 0
		if s.prefers != nil {
			if j := slices.IndexFunc(free, s.prefers); j >= 0 {
				i = j
			}
		}
		chosen[free[i]] = s
		free = slices.Delete(free, i, i+1)
	}

	out := make([]Assignment, 0, len(agents))
	for _, a := range agents {
		s, ok := chosen[a]
		if !ok {
			s = controlScenario
		}
		arng := rand.New(rand.NewPCG(uint64(seed), uint64(a.index)+1))
		as, err := s.instantiate(arng, a.tmpl.Gen, a.base, duration)
		if err != nil {
			return nil, fmt.Errorf("fleet: scenario %s on %s (%s): %w", s.Name, a.id, a.tmpl.Name, err)
		}
		as.Agent, as.AgentID, as.AgentURL, as.CardURL = a, a.id, a.URL(), a.CardURL()
		out = append(out, as)
	}
	return out, nil
}
