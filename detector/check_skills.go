package detector

import "slices"

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
