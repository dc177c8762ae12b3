package detector

// checkSkillRemoved reports every skill id of the pinned card that the live
// card no longer declares. A renamed skill (new id) is removed and added.
func checkSkillRemoved(pinned, live *Card) []Finding {
	var out []Finding
	for _, s := range skillsByID(pinned) {
		if _, ok := skillByID(live, s.ID); ok {
			continue
		}
		out = append(out, Finding{
			Rule:     RuleSkillRemoved,
			Severity: Breaking,
			Path:     skillPointer(s),
			Before:   s.ID,
			Message:  render(RuleSkillRemoved, "skill", quote(s.ID)),
			Skill:    s.ID,
		})
	}
	return out
}

// checkSkillAdded reports every skill id of the live card that the pinned card
// did not declare.
func checkSkillAdded(pinned, live *Card) []Finding {
	var out []Finding
	for _, s := range skillsByID(live) {
		if _, ok := skillByID(pinned, s.ID); ok {
			continue
		}
		out = append(out, Finding{
			Rule:     RuleSkillAdded,
			Severity: Info,
			Path:     skillPointer(s),
			After:    s.ID,
			Message:  render(RuleSkillAdded, "skill", quote(s.ID)),
			Skill:    s.ID,
		})
	}
	return out
}
