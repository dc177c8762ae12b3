package detector

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// SkillContract is what a planner relies on when it sends a task to a skill,
// and so what must hold for it to fall back from one agent to another that
// offers a skill with the same id: the effective modes (the skill's, else the
// card's defaults), whether the agent streams and pushes, and the security
// that applies to the skill. Security compares scheme kinds, not names (a
// scheme's name is local to its card): each alternative lists its schemes as
// "http bearer", "apiKey header X-Key", "oauth2 [scopes]" and so on,
// alternatives sorted, "none" for no authentication.
type SkillContract struct {
	InputModes        []string `json:"inputModes"`
	OutputModes       []string `json:"outputModes"`
	Streaming         bool     `json:"streaming"`
	PushNotifications bool     `json:"pushNotifications"`
	Security          []string `json:"security"`
}

// ContractOf returns the contract of skill id on card c, and false when c
// does not offer it.
func ContractOf(c *Card, id string) (SkillContract, bool) {
	s, ok := c.Skill(id)
	if !ok {
		return SkillContract{}, false
	}
	sorted := func(ms []string) []string {
		out := slices.Clone(ms)
		slices.Sort(out)
		return slices.Compact(out)
	}
	return SkillContract{
		InputModes:        sorted(c.InputModes(s)),
		OutputModes:       sorted(c.OutputModes(s)),
		Streaming:         c.Capabilities.Streaming,
		PushNotifications: c.Capabilities.PushNotifications,
		Security:          securityKinds(c, skillRequirements(c, s)),
	}, true
}

// securityKinds describes requirements by the kinds of their schemes.
func securityKinds(c *Card, rs []SecurityRequirement) []string {
	var alts []string
	for _, r := range rs {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r)) {
			part := schemeKind(c.SecuritySchemes[name], name)
			if scopes := slices.Compact(slices.Sorted(slices.Values(r[name]))); len(scopes) > 0 {
				part += " [" + strings.Join(scopes, " ") + "]"
			}
			parts = append(parts, part)
		}
		slices.Sort(parts)
		alts = append(alts, strings.Join(parts, " and "))
	}
	if len(alts) == 0 {
		return []string{"none"}
	}
	slices.Sort(alts)
	return slices.Compact(alts)
}

// schemeKind names a security scheme by what a client must do for it.
func schemeKind(s SecurityScheme, name string) string {
	switch s.Type {
	case "":
		return "undeclared " + name
	case "http":
		return strings.TrimSpace("http " + s.Scheme)
	case "apiKey":
		return strings.TrimSpace(fmt.Sprintf("apiKey %s %s", s.Location, s.Name))
	}
	return s.Type
}

// SkillDifference is one part of a shared skill's contract that differs
// between agents: Field is a SkillContract member ("inputModes",
// "outputModes", "streaming", "pushNotifications", "security"), Values its
// value on each agent, by agent URL.
type SkillDifference struct {
	Field  string         `json:"field"`
	Values map[string]any `json:"values"`
}

// SharedSkill is a skill id that more than one agent offers: the agents
// (sorted), whether their contracts agree, and where they do not.
type SharedSkill struct {
	ID          string            `json:"id"`
	Agents      []string          `json:"agents"`
	Consistent  bool              `json:"consistent"`
	Differences []SkillDifference `json:"differences"`
}

// CompareSkills finds the skill ids that several of the cards (by agent URL)
// offer and compares their contracts: a planner that falls back from one
// agent to another offering the same skill id is silently wrong when they
// differ. The result is sorted by id; skills only one agent offers are not
// in it. Nil cards are skipped. Pure and deterministic.
func CompareSkills(cards map[string]*Card) []SharedSkill {
	byID := map[string][]string{}
	for agent, c := range cards {
		if c == nil {
			continue
		}
		for _, s := range c.Skills {
			if s.ID != "" && !slices.Contains(byID[s.ID], agent) {
				byID[s.ID] = append(byID[s.ID], agent)
			}
		}
	}
	var out []SharedSkill
	for id, agents := range byID {
		if len(agents) < 2 {
			continue
		}
		slices.Sort(agents)
		contracts := make([]SkillContract, len(agents))
		for i, a := range agents {
			contracts[i], _ = ContractOf(cards[a], id)
		}
		sh := SharedSkill{ID: id, Agents: agents, Differences: []SkillDifference{}}
		for _, field := range []struct {
			name string
			get  func(SkillContract) any
			eq   func(a, b SkillContract) bool
		}{
			{"inputModes", func(c SkillContract) any { return c.InputModes }, func(a, b SkillContract) bool { return slices.Equal(a.InputModes, b.InputModes) }},
			{"outputModes", func(c SkillContract) any { return c.OutputModes }, func(a, b SkillContract) bool { return slices.Equal(a.OutputModes, b.OutputModes) }},
			{"streaming", func(c SkillContract) any { return c.Streaming }, func(a, b SkillContract) bool { return a.Streaming == b.Streaming }},
			{"pushNotifications", func(c SkillContract) any { return c.PushNotifications }, func(a, b SkillContract) bool { return a.PushNotifications == b.PushNotifications }},
			{"security", func(c SkillContract) any { return c.Security }, func(a, b SkillContract) bool { return slices.Equal(a.Security, b.Security) }},
		} {
			same := true
			for _, c := range contracts[1:] {
				if !field.eq(contracts[0], c) {
					same = false
					break
				}
			}
			if same {
				continue
			}
			d := SkillDifference{Field: field.name, Values: map[string]any{}}
			for i, a := range agents {
				d.Values[a] = field.get(contracts[i])
			}
			sh.Differences = append(sh.Differences, d)
		}
		sh.Consistent = len(sh.Differences) == 0
		out = append(out, sh)
	}
	slices.SortFunc(out, func(a, b SharedSkill) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
