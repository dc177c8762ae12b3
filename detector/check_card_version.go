package detector

// checkCardVersion reports a change of the card's own version field. On its
// own it breaks nothing; the other rules say what changed with it.
func checkCardVersion(pinned, live *Card) []Finding {
	if pinned.Version == live.Version {
		return nil
	}
	return []Finding{{
		Rule:     RuleCardVersionChanged,
		Severity: Info,
		Path:     pointer("version"),
		Before:   pinned.Version,
		After:    live.Version,
		Message:  render(RuleCardVersionChanged, "before", quote(pinned.Version), "after", quote(live.Version)),
	}}
}
