package detector

import "testing"

func noStreaming(c *Card) { c.Capabilities.Streaming = false }

func TestCapabilityChecks(t *testing.T) {
	noPush := func(c *Card) { c.Capabilities.PushNotifications = false }
	noExtendedCard := func(c *Card) { c.Capabilities.ExtendedAgentCard = false }
	finding := func(rule string, sev Severity, field string, before bool, msg string) []Finding {
		return []Finding{{Rule: rule, Severity: sev, Path: "/capabilities/" + field, Before: before, After: !before, Message: msg}}
	}
	for _, tc := range []struct {
		call            string
		check           func(p, l *Card) []Finding
		off             func(*Card)
		whenOff, whenOn []Finding
		more            []checkCase
	}{
		{call: "checkStreamingDisabled", check: checkStreamingDisabled, off: noStreaming,
			whenOff: finding(RuleStreamingDisabled, Breaking, "streaming", true,
				"streaming is no longer supported: streaming calls will not get an event stream")},
		{call: "checkStreamingEnabled", check: checkStreamingEnabled, off: noStreaming,
			whenOn: finding(RuleStreamingEnabled, Info, "streaming", false, "streaming is now supported")},
		{call: "checkPushDisabled", check: checkPushDisabled, off: noPush,
			whenOff: finding(RulePushNotificationsDisabled, Breaking, "pushNotifications", true,
				"push notifications are no longer supported: push configuration calls will fail")},
		{call: "checkPushEnabled", check: checkPushEnabled, off: noPush,
			whenOn: finding(RulePushNotificationsEnabled, Info, "pushNotifications", false, "push notifications are now supported")},
		{call: "checkExtendedCard", check: checkExtendedCard, off: noExtendedCard,
			whenOff: finding(RuleExtendedCardChanged, Breaking, "extendedAgentCard", true,
				"the authenticated extended card is no longer offered"),
			whenOn: finding(RuleExtendedCardChanged, Info, "extendedAgentCard", false,
				"an authenticated extended card is now offered"),
			more: []checkCase{{name: "unchanged while other capabilities flip", live: modified(noStreaming)}}},
	} {
		t.Run(tc.call, func(t *testing.T) {
			runCheck(t, tc.call+"(pinned, live)", tc.check, append(flipCases(tc.off, tc.whenOff, tc.whenOn), tc.more...))
		})
	}
}
