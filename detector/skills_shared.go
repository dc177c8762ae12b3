package detector

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// SkillContract is what a planner relies on when it falls back from one agent
// to another offering a skill of the same id. Security compares scheme kinds,
// not names (local to a card): "http bearer", "apiKey header X-Key",
// "oauth2 [scopes]", alternatives sorted, "none" for no authentication.
type SkillContract struct {
	InputModes        []string `json:"inputModes"`
	OutputModes       []string `json:"outputModes"`
	Streaming         bool     `json:"streaming"`
	PushNotifications bool     `json:"pushNotifications"`
	Security          []string `json:"security"`
}

// ContractOf returns the contract of skill id on c, if c offers it.
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

// SkillDifference is a SkillContract member (its JSON name) that differs
// between agents, with its value by agent URL.
type SkillDifference struct {
	Field  string         `json:"field"`
	Values map[string]any `json:"values"`
}

// SharedSkill is a skill id that more than one agent offers.
type SharedSkill struct {
	ID          string            `json:"id"`
	Agents      []string          `json:"agents"`
	Consistent  bool              `json:"consistent"`
	Differences []SkillDifference `json:"differences"`
}

// CompareSkills compares the contracts of the skill ids that several of the
// cards (by agent URL) offer, sorted by id. Nil cards are skipped.
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
