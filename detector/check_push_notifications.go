package detector

// checkPushDisabled reports capabilities.pushNotifications turned off: push
// configuration calls now fail (-32003) and a client waiting for a webhook
// waits forever.
func checkPushDisabled(pinned, live *Card) []Finding {
	if !pinned.Capabilities.PushNotifications || live.Capabilities.PushNotifications {
		return nil
	}
	return []Finding{capabilityFinding(RulePushNotificationsDisabled, Breaking, "pushNotifications", true, false)}
}

// checkPushEnabled reports capabilities.pushNotifications turned on.
func checkPushEnabled(pinned, live *Card) []Finding {
	if pinned.Capabilities.PushNotifications || !live.Capabilities.PushNotifications {
		return nil
	}
	return []Finding{capabilityFinding(RulePushNotificationsEnabled, Info, "pushNotifications", false, true)}
}
