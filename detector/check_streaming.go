package detector

// checkStreamingDisabled: streaming calls would wait for an event stream
// that never comes.
func checkStreamingDisabled(pinned, live *Card) []Finding {
	return capabilityTurned(false, RuleStreamingDisabled, Breaking, "streaming",
		pinned.Capabilities.Streaming, live.Capabilities.Streaming)
}

func checkStreamingEnabled(pinned, live *Card) []Finding {
	return capabilityTurned(true, RuleStreamingEnabled, Info, "streaming",
		pinned.Capabilities.Streaming, live.Capabilities.Streaming)
}

// capabilityTurned reports the capability field turned to on.
func capabilityTurned(on bool, rule string, sev Severity, field string, pinned, live bool) []Finding {
	if pinned == live || live != on {
		return nil
	}
	return []Finding{capabilityFinding(rule, sev, field, pinned, live)}
}

func capabilityFinding(rule string, sev Severity, field string, before, after bool) Finding {
	return newFinding(rule, "", sev, pointer("capabilities", field), before, after)
}
