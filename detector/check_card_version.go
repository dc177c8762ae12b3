package detector

// checkCardVersion reports a change of the card's version field.
func checkCardVersion(pinned, live *Card) []Finding {
	if pinned.Version == live.Version {
		return nil
	}
	return []Finding{versionFinding(RuleCardVersionChanged, Info, pinned, live,
		"before", quote(pinned.Version), "after", quote(live.Version))}
}

// versionFinding is a finding of rule at the card's version field.
func versionFinding(rule string, sev Severity, pinned, live *Card, kv ...string) Finding {
	return newFinding(rule, "", sev, pointer("version"), pinned.Version, live.Version, kv...)
}
