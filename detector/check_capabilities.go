package detector

// Withdrawn streaming (streaming calls would wait for an event stream that
// never comes) or push (push configuration calls fail with -32003) is
// breaking; offered, info.
var (
	streaming = func(c *Card) bool { return c.Capabilities.Streaming }
	push      = func(c *Card) bool { return c.Capabilities.PushNotifications }

	checkStreamingDisabled = capabilityTurned(false, RuleStreamingDisabled, Breaking, "streaming", streaming)
	checkStreamingEnabled  = capabilityTurned(true, RuleStreamingEnabled, Info, "streaming", streaming)
	checkPushDisabled      = capabilityTurned(false, RulePushNotificationsDisabled, Breaking, "pushNotifications", push)
	checkPushEnabled       = capabilityTurned(true, RulePushNotificationsEnabled, Info, "pushNotifications", push)
)

// capabilityTurned returns the check of a capability field turned to on.
func capabilityTurned(on bool, rule string, sev Severity, field string, get func(*Card) bool) func(pinned, live *Card) []Finding {
	return func(pinned, live *Card) []Finding {
		p, l := get(pinned), get(live)
		if p == l || l != on {
			return nil
		}
		return []Finding{newFinding(rule, "", sev, pointer("capabilities", field), p, l)}
	}
}

// checkExtendedCard: withdrawn is breaking (GetExtendedAgentCard now fails
// with -32007), offered is info.
func checkExtendedCard(pinned, live *Card) []Finding {
	p, l := pinned.Capabilities.ExtendedAgentCard, live.Capabilities.ExtendedAgentCard
	if p == l {
		return nil
	}
	variant, sev := "/offered", Info
	if p {
		variant, sev = "/withdrawn", Breaking
	}
	return []Finding{newFinding(RuleExtendedCardChanged, variant, sev, pointer("capabilities", "extendedAgentCard"), p, l)}
}
