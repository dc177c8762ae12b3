package detector

// Withdrawn streaming (streaming calls would wait for an event stream that
// never comes) or push (push configuration calls fail with -32003) is
// breaking; offered, info.
var (
	streaming = func(c *Card) bool { return c.Capabilities.Streaming }
	push      = func(c *Card) bool { return c.Capabilities.PushNotifications }

	checkStreamingDisabled = turned(false, RuleStreamingDisabled, Breaking, pointer("capabilities", "streaming"), streaming, nil)
	checkStreamingEnabled  = turned(true, RuleStreamingEnabled, Info, pointer("capabilities", "streaming"), streaming, nil)
	checkPushDisabled      = turned(false, RulePushNotificationsDisabled, Breaking, pointer("capabilities", "pushNotifications"), push, nil)
	checkPushEnabled       = turned(true, RulePushNotificationsEnabled, Info, pointer("capabilities", "pushNotifications"), push, nil)
)

// turned returns the check of a boolean of the card (get) turned to on: a
// finding at path, the message's values kv of the card where get is true.
func turned(on bool, rule string, sev Severity, path string, get func(*Card) bool, kv func(*Card) []string) func(pinned, live *Card) []Finding {
	return func(pinned, live *Card) []Finding {
		p, l := get(pinned), get(live)
		if p == l || l != on {
			return nil
		}
		var args []string
		if c := live; kv != nil {
			if !on {
				c = pinned
			}
			args = kv(c)
		}
		return []Finding{newFinding(rule, "", sev, path, p, l, args...)}
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
