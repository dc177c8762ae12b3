package detector

// checkPushDisabled: push configuration calls now fail (-32003).
func checkPushDisabled(pinned, live *Card) []Finding {
	return capabilityTurned(false, RulePushNotificationsDisabled, Breaking, "pushNotifications",
		pinned.Capabilities.PushNotifications, live.Capabilities.PushNotifications)
}

func checkPushEnabled(pinned, live *Card) []Finding {
	return capabilityTurned(true, RulePushNotificationsEnabled, Info, "pushNotifications",
		pinned.Capabilities.PushNotifications, live.Capabilities.PushNotifications)
}
