package detector

// checkDefaultInputModes reports a change of the card's defaultInputModes.
func checkDefaultInputModes(pinned, live *Card) []Finding {
	f, ok := modesFinding(RuleDefaultInputModesChanged, pinned.DefaultInputModes, live.DefaultInputModes, Info)
	if !ok {
		return nil
	}
	f.Path = pointer("defaultInputModes")
	return []Finding{f}
}

// checkDefaultOutputModes reports a change of the card's defaultOutputModes.
func checkDefaultOutputModes(pinned, live *Card) []Finding {
	f, ok := modesFinding(RuleDefaultOutputModesChanged, pinned.DefaultOutputModes, live.DefaultOutputModes, Warning)
	if !ok {
		return nil
	}
	f.Path = pointer("defaultOutputModes")
	return []Finding{f}
}
