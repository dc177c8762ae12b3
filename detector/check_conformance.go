package detector

// checkNonconformant reports every nonconformance of the live card that the
// pinned card did not have (same pointer and reason): starting to be sloppy is
// drift, always having been is not.
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
		out = append(out, newFinding(RuleCardNonconformant, "", Warning, n.Path, nil, n.Message, "reason", n.Message))
	}
	return out
}
