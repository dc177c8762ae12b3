package detector

// checkSkillRemoved reports every skill id of the pinned card that the live
// card no longer declares, unless the live card offers the skill under a new
// id (skill-renamed; see renamedSkills).
func checkSkillRemoved(pinned, live *Card) []Finding {
	var out []Finding
	var renames []skillRename
	looked := false
	for _, s := range skillsByID(pinned) {
		if _, ok := skillByID(live, s.ID); ok {
			continue
		}
		if !looked {
			renames, looked = renamedSkills(pinned, live), true
		}
		if !renamedFrom(renames, s.ID) {
			out = append(out, skillFinding(RuleSkillRemoved, Breaking, s, s.ID, nil))
		}
	}
	return out
}

// checkSkillAdded reports every skill id of the live card that the pinned card
// did not declare, unless it is a pinned skill's new id (skill-renamed).
func checkSkillAdded(pinned, live *Card) []Finding {
	var out []Finding
	var renames []skillRename
	looked := false
	for _, s := range skillsByID(live) {
		if _, ok := skillByID(pinned, s.ID); ok {
			continue
		}
		if !looked {
			renames, looked = renamedSkills(pinned, live), true
		}
		if !renamedTo(renames, s.ID) {
			out = append(out, skillFinding(RuleSkillAdded, Info, s, nil, s.ID))
		}
	}
	return out
}

// skillFinding is a finding of rule about skill s (in the card that declares
// it), going from before to after.
func skillFinding(rule string, sev Severity, s Skill, before, after any) Finding {
	return Finding{
		Rule:     rule,
		Severity: sev,
		Path:     skillPointer(s),
		Before:   before,
		After:    after,
		Message:  render(rule, "skill", quote(s.ID)),
		Skill:    s.ID,
	}
}
