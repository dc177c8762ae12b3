package detector

import (
	"slices"
	"strings"
)

// checkSkillRenamed reports every pinned skill whose id is gone while exactly
// one new id of the live card has the same contract (renamedSkills): breaking,
// as skill-removed is, touching the tasks on the old id (Skill) and naming the
// new id (After) for a degrade task to re-plan onto. Such a pair is neither
// skill-removed nor skill-added.
func checkSkillRenamed(pinned, live *Card) []Finding {
	var out []Finding
	for _, r := range renamedSkills(pinned, live) {
		out = append(out, Finding{
			Rule:     RuleSkillRenamed,
			Severity: Breaking,
			Path:     skillPointer(r.to, "id"),
			Before:   r.from.ID,
			After:    r.to.ID,
			Message:  render(RuleSkillRenamed, "before", quote(r.from.ID), "after", quote(r.to.ID)),
			Skill:    r.from.ID,
		})
	}
	return out
}

// skillRename is a skill of the pinned card (from) that the live card offers
// under another id (to).
type skillRename struct {
	from, to Skill
}

// renamedSkills pairs the skills only the pinned card declares (gone) with
// those only the live card declares (new) when their contracts are the same:
// effective modes (by coverage, as sets), tags (as sets) and the security
// requirements that apply to the skill (alternatives as sets). A pair is a
// rename only when each side matches exactly one skill of the other; skills
// with an empty id are never paired. The pairs are in the gone skills' id
// order.
func renamedSkills(pinned, live *Card) []skillRename {
	var gone, added []Skill
	for _, s := range skillsByID(pinned) {
		if _, ok := skillByID(live, s.ID); !ok && s.ID != "" {
			gone = append(gone, s)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	for _, s := range skillsByID(live) {
		if _, ok := skillByID(pinned, s.ID); !ok && s.ID != "" {
			added = append(added, s)
		}
	}
	if len(added) == 0 {
		return nil
	}
	goneKeys := make([]string, len(gone))
	for i, s := range gone {
		goneKeys[i] = skillContract(pinned, s)
	}
	addedKeys := make([]string, len(added))
	for i, s := range added {
		addedKeys[i] = skillContract(live, s)
	}
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

// skillContract is a canonical form of what a client of skill s in card c
// relies on, for renamedSkills: equal strings are equal contracts.
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
