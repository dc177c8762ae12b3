package detector

// checkPushDisabled reports capabilities.pushNotifications turned off: push
// configuration calls now fail (-32003) and a client waiting for a webhook
// waits forever.
func checkPushDisabled(pinned, live *Card) []Finding {
	return capabilityTurned(false, RulePushNotificationsDisabled, Breaking, "pushNotifications",
		pinned.Capabilities.PushNotifications, live.Capabilities.PushNotifications)
}

// checkPushEnabled reports capabilities.pushNotifications turned on.
func checkPushEnabled(pinned, live *Card) []Finding {
	return capabilityTurned(true, RulePushNotificationsEnabled, Info, "pushNotifications",
		pinned.Capabilities.PushNotifications, live.Capabilities.PushNotifications)
}
