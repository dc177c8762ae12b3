package detector

// checkCardVersion reports a change of the card's own version field. On its
// own it breaks nothing; the other rules say what changed with it.
func checkCardVersion(pinned, live *Card) []Finding {
	if pinned.Version == live.Version {
		return nil
	}
	return []Finding{versionFinding(RuleCardVersionChanged, Info, pinned, live,
		"before", quote(pinned.Version), "after", quote(live.Version))}
}

// versionFinding is a finding of rule at the card's version field, from the
// pinned card's version to the live card's; kv are the message's parameters.
func versionFinding(rule string, sev Severity, pinned, live *Card, kv ...string) Finding {
	return Finding{
		Rule:     rule,
		Severity: sev,
		Path:     pointer("version"),
		Before:   pinned.Version,
		After:    live.Version,
		Message:  render(rule, kv...),
	}
}
