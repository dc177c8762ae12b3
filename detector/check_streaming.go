package detector

// checkStreamingDisabled reports capabilities.streaming turned off: a client
// that planned streaming calls would block on an event stream that never
// comes (the pinning write-up's failure).
func checkStreamingDisabled(pinned, live *Card) []Finding {
	return capabilityTurned(false, RuleStreamingDisabled, Breaking, "streaming",
		pinned.Capabilities.Streaming, live.Capabilities.Streaming)
}

// checkStreamingEnabled reports capabilities.streaming turned on.
func checkStreamingEnabled(pinned, live *Card) []Finding {
	return capabilityTurned(true, RuleStreamingEnabled, Info, "streaming",
		pinned.Capabilities.Streaming, live.Capabilities.Streaming)
}

// capabilityTurned reports the boolean capability field turned to on (from
// !on in the pinned card to on in the live one) as a finding of rule.
func capabilityTurned(on bool, rule string, sev Severity, field string, pinned, live bool) []Finding {
	if pinned == live || live != on {
		return nil
	}
	return []Finding{capabilityFinding(rule, sev, field, pinned, live)}
}

// capabilityFinding is a flip of the boolean capability field.
func capabilityFinding(rule string, sev Severity, field string, before, after bool) Finding {
	return Finding{
		Rule:     rule,
		Severity: sev,
		Path:     pointer("capabilities", field),
		Before:   before,
		After:    after,
		Message:  render(rule),
	}
}
