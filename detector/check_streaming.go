package detector

// checkStreamingDisabled reports capabilities.streaming turned off: a client
// that planned streaming calls would block on an event stream that never
// comes (the pinning write-up's failure).
func checkStreamingDisabled(pinned, live *Card) []Finding {
	if !pinned.Capabilities.Streaming || live.Capabilities.Streaming {
		return nil
	}
	return []Finding{capabilityFinding(RuleStreamingDisabled, Breaking, "streaming", true, false)}
}

// checkStreamingEnabled reports capabilities.streaming turned on.
func checkStreamingEnabled(pinned, live *Card) []Finding {
	if pinned.Capabilities.Streaming || !live.Capabilities.Streaming {
		return nil
	}
	return []Finding{capabilityFinding(RuleStreamingEnabled, Info, "streaming", false, true)}
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
