package detector

import (
	"slices"
	"strings"
)

// checkSkillRemoved reports every pinned skill id the live card no longer
// declares, unless renamed.
func checkSkillRemoved(pinned, live *Card) []Finding {
	var out []Finding
	for _, s := range unrenamed(pinned, live, skillsByID(pinned), live, func(r skillRename) Skill { return r.from }) {
		out = append(out, skillFinding(RuleSkillRemoved, Breaking, s, s.ID, nil))
	}
	return out
}

func checkSkillAdded(pinned, live *Card) []Finding {
	var out []Finding
	for _, s := range unrenamed(pinned, live, skillsByID(live), pinned, func(r skillRename) Skill { return r.to }) {
		out = append(out, skillFinding(RuleSkillAdded, Info, s, nil, s.ID))
	}
	return out
}

// unrenamed returns the skills other does not declare and no rename explains.
func unrenamed(pinned, live *Card, skills []Skill, other *Card, side func(skillRename) Skill) []Skill {
	var out []Skill
	var renames []skillRename
	looked := false
	for _, s := range skills {
		if _, ok := skillByID(other, s.ID); ok {
			continue
		}
		if !looked {
			renames, looked = renamedSkills(pinned, live), true
		}
		if !slices.ContainsFunc(renames, func(r skillRename) bool { return side(r).ID == s.ID }) {
			out = append(out, s)
		}
	}
	return out
}

func skillFinding(rule string, sev Severity, s Skill, before, after any) Finding {
	f := newFinding(rule, "", sev, skillPointer(s), before, after, "skill", quote(s.ID))
	f.Skill = s.ID
	return f
}

// checkSkillRenamed reports every pinned skill whose id is gone while one new
// id has the same contract (renamedSkills): Skill is the old id, After the new.
func checkSkillRenamed(pinned, live *Card) []Finding {
	var out []Finding
	for _, r := range renamedSkills(pinned, live) {
		f := newFinding(RuleSkillRenamed, "", Breaking, skillPointer(r.to, "id"), r.from.ID, r.to.ID,
			"before", quote(r.from.ID), "after", quote(r.to.ID))
		f.Skill = r.from.ID
		out = append(out, f)
	}
	return out
}

type skillRename struct {
	from, to Skill
}

// renamedSkills pairs the skills only the pinned card declares with those
// only the live card declares when their skillContracts are equal and each
// matches exactly one of the other side, in id order.
func renamedSkills(pinned, live *Card) []skillRename {
	// only returns the skills a declares and b does not, and their contracts.
	only := func(a, b *Card) (skills []Skill, keys []string) {
		for _, s := range skillsByID(a) {
			if _, ok := skillByID(b, s.ID); !ok && s.ID != "" {
				skills, keys = append(skills, s), append(keys, skillContract(a, s))
			}
		}
		return skills, keys
	}
	gone, goneKeys := only(pinned, live)
	if len(gone) == 0 {
		return nil
	}
	added, addedKeys := only(live, pinned)
	count := func(keys []string, k string) int {
		n := 0
		for _, o := range keys {
			if o == k {
				n++
			}
		}
		return n
	}
	var out []skillRename
	for i, k := range goneKeys {
		if count(goneKeys, k) != 1 || count(addedKeys, k) != 1 {
			continue
		}
		out = append(out, skillRename{from: gone[i], to: added[slices.Index(addedKeys, k)]})
	}
	return out
}

// skillContract is a canonical form of effective modes (by coverage), tags
// and requirements (as sets): equal strings are equal contracts.
func skillContract(c *Card, s Skill) string {
	var b strings.Builder
	list := func(ss []string) {
		for _, v := range ss {
			b.WriteString(v)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	list(normalizeModes(c.InputModes(s)))
	list(normalizeModes(c.OutputModes(s)))
	list(slices.Compact(slices.Sorted(slices.Values(s.Tags))))
	for _, r := range canonicalRequirements(skillRequirements(c, s)) {
		b.WriteString(r.key)
		b.WriteByte(3)
	}
	return b.String()
}
