package detector

// checkNonconformant reports every part of the live card that follows no
// known version's schema and that the pinned card did not already have (same
// pointer, same reason): a card that was always sloppy in one place is not
// drift, a card that starts being sloppy is. Carddrift reads around such
// parts, so the finding is a warning: what could still be read is compared
// by the other rules.
func checkNonconformant(pinned, live *Card) []Finding {
	if len(live.Conformance) == 0 {
		return nil
	}
	had := make(map[Nonconformance]bool, len(pinned.Conformance))
	for _, n := range pinned.Conformance {
		had[n] = true
	}
	var out []Finding
	for _, n := range live.Conformance {
		if had[n] {
			continue
		}
		had[n] = true
		out = append(out, Finding{
			Rule:     RuleCardNonconformant,
			Severity: Warning,
			Path:     n.Path,
			After:    n.Message,
			Message:  render(RuleCardNonconformant, "reason", n.Message),
		})
	}
	return out
}
