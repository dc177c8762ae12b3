package detector

import "slices"

// Mode checks compare media type coverage (modeDelta), per retained skill.

func checkSkillInputModes(pinned, live *Card) []Finding {
	return skillModes(pinned, live, RuleSkillInputModesChanged, (*Card).InputModes,
		func(s Skill) bool { return s.InputModes != nil }, "inputModes", "defaultInputModes", Info)
}

func checkSkillOutputModes(pinned, live *Card) []Finding {
	return skillModes(pinned, live, RuleSkillOutputModesChanged, (*Card).OutputModes,
		func(s Skill) bool { return s.OutputModes != nil }, "outputModes", "defaultOutputModes", Warning)
}

// skillModes points at where the live effective modes are declared.
func skillModes(pinned, live *Card, rule string, effective func(*Card, Skill) []string,
	declares func(Skill) bool, field, defaultField string, widened Severity) []Finding {
	var out []Finding
	retainedSkills(pinned, live, func(p, l Skill) {
		before, after := effective(pinned, p), effective(live, l)
		if slices.Equal(before, after) {
			return
		}
		f, ok := modesFinding(rule, before, after, widened, "skill", quote(l.ID))
		if !ok {
			return
		}
		f.Skill = l.ID
		if declares(l) {
			f.Path = skillPointer(l, field)
		} else {
			f.Path = pointer(defaultField)
		}
		out = append(out, f)
	})
	return out
}

// modesFinding: narrowing is breaking; pure widening has severity widened.
func modesFinding(rule string, before, after []string, widened Severity, kv ...string) (Finding, bool) {
	removed, added := modeDelta(before, after)
	var variant string
	sev := Breaking
	switch {
	case removed == nil && added == nil:
		return Finding{}, false
	case added == nil:
		variant = "/narrowed"
	case removed == nil:
		variant, sev = "/widened", widened
	default:
		variant = "/replaced"
	}
	kv = append(kv, "removed", quoteList(removed), "added", quoteList(added))
	return newFinding(rule, variant, sev, "", plainStrings(before), plainStrings(after), kv...), true
}

func checkDefaultInputModes(pinned, live *Card) []Finding {
	return defaultModes(RuleDefaultInputModesChanged, "defaultInputModes", pinned.DefaultInputModes, live.DefaultInputModes, Info)
}

func checkDefaultOutputModes(pinned, live *Card) []Finding {
	return defaultModes(RuleDefaultOutputModesChanged, "defaultOutputModes", pinned.DefaultOutputModes, live.DefaultOutputModes, Warning)
}

// defaultModes compares the card's default modes (see modesFinding).
func defaultModes(rule, field string, before, after []string, widened Severity) []Finding {
	f, ok := modesFinding(rule, before, after, widened)
	if !ok {
		return nil
	}
	f.Path = pointer(field)
	return []Finding{f}
}
