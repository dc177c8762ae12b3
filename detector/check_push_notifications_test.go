package detector

import "testing"

func noPush(c *Card) { c.Capabilities.PushNotifications = false }

func TestCheckPushDisabled(t *testing.T) {
	runCheck(t, "checkPushDisabled(pinned, live)", checkPushDisabled, flipCases(noPush, []Finding{{
		Rule: RulePushNotificationsDisabled, Severity: Breaking, Path: "/capabilities/pushNotifications",
		Before: true, After: false,
		Message: "push notifications are no longer supported: push configuration calls will fail",
	}}, nil))
}

func TestCheckPushEnabled(t *testing.T) {
	runCheck(t, "checkPushEnabled(pinned, live)", checkPushEnabled, flipCases(noPush, nil, []Finding{{
		Rule: RulePushNotificationsEnabled, Severity: Info, Path: "/capabilities/pushNotifications",
		Before: false, After: true, Message: "push notifications are now supported",
	}}))
}
