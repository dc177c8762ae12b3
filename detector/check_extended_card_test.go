package detector

import "testing"

func TestCheckExtendedCard(t *testing.T) {
	runCheck(t, "checkExtendedCard(pinned, live)", checkExtendedCard, []checkCase{
		{
			name:   "withdrawn",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.ExtendedAgentCard = false }),
			want: []Finding{{
				Rule: RuleExtendedCardChanged, Severity: Breaking, Path: "/capabilities/extendedAgentCard",
				Before: true, After: false, Message: "the authenticated extended card is no longer offered",
			}},
		},
		{
			name:   "offered",
			pinned: modified(func(c *Card) { c.Capabilities.ExtendedAgentCard = false }),
			live:   testCard(),
			want: []Finding{{
				Rule: RuleExtendedCardChanged, Severity: Info, Path: "/capabilities/extendedAgentCard",
				Before: false, After: true, Message: "an authenticated extended card is now offered",
			}},
		},
		{
			name:   "unchanged while other capabilities flip",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Streaming = false }),
		},
	})
}
