package detector

// checkExtendedCard: withdrawn is breaking (GetExtendedAgentCard now fails
// with -32007), offered is info.
func checkExtendedCard(pinned, live *Card) []Finding {
	p, l := pinned.Capabilities.ExtendedAgentCard, live.Capabilities.ExtendedAgentCard
	if p == l {
		return nil
	}
	variant, sev := "/offered", Info
	if p {
		variant, sev = "/withdrawn", Breaking
	}
	return []Finding{newFinding(RuleExtendedCardChanged, variant, sev, pointer("capabilities", "extendedAgentCard"), p, l)}
}
