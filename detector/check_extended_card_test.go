package detector

import "testing"

func TestCheckExtendedCard(t *testing.T) {
	noExtendedCard := func(c *Card) { c.Capabilities.ExtendedAgentCard = false }
	runCheck(t, "checkExtendedCard(pinned, live)", checkExtendedCard, append(flipCases(noExtendedCard, []Finding{{
		Rule: RuleExtendedCardChanged, Severity: Breaking, Path: "/capabilities/extendedAgentCard",
		Before: true, After: false, Message: "the authenticated extended card is no longer offered",
	}}, []Finding{{
		Rule: RuleExtendedCardChanged, Severity: Info, Path: "/capabilities/extendedAgentCard",
		Before: false, After: true, Message: "an authenticated extended card is now offered",
	}}), checkCase{
		name:   "unchanged while other capabilities flip",
		pinned: testCard(),
		live:   modified(noStreaming),
	}))
}
