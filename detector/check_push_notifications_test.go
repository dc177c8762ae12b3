package detector

import "testing"

func TestCheckPushDisabled(t *testing.T) {
	runCheck(t, "checkPushDisabled(pinned, live)", checkPushDisabled, []checkCase{
		{
			name:   "turned off",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.PushNotifications = false }),
			want: []Finding{{
				Rule: RulePushNotificationsDisabled, Severity: Breaking, Path: "/capabilities/pushNotifications",
				Before: true, After: false,
				Message: "push notifications are no longer supported: push configuration calls will fail",
			}},
		},
		{
			name:   "turned on",
			pinned: modified(func(c *Card) { c.Capabilities.PushNotifications = false }),
			live:   testCard(),
		},
	})
}

func TestCheckPushEnabled(t *testing.T) {
	runCheck(t, "checkPushEnabled(pinned, live)", checkPushEnabled, []checkCase{
		{
			name:   "turned on",
			pinned: modified(func(c *Card) { c.Capabilities.PushNotifications = false }),
			live:   testCard(),
			want: []Finding{{
				Rule: RulePushNotificationsEnabled, Severity: Info, Path: "/capabilities/pushNotifications",
				Before: false, After: true, Message: "push notifications are now supported",
			}},
		},
		{
			name:   "turned off",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.PushNotifications = false }),
		},
	})
}
