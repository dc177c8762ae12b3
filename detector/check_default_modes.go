package detector

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
