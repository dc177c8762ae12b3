package detector

import "testing"

func TestCheckCardVersion(t *testing.T) {
	changed := func(after, message string) []Finding {
		return []Finding{{
			Rule: RuleCardVersionChanged, Severity: Info, Path: "/version",
			Before: "1.2.0", After: after, Message: message,
		}}
	}
	runCheck(t, "checkCardVersion(pinned, live)", checkCardVersion, []checkCase{
		{
			name:   "bumped",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Version = "1.3.0" }),
			want:   changed("1.3.0", `card version changed from "1.2.0" to "1.3.0"`),
		},
		{
			name:   "dropped",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Version = "" }),
			want:   changed("", `card version changed from "1.2.0" to ""`),
		},
		{
			name:   "content changed, version kept",
			pinned: testCard(),
			live:   modified(noStreaming),
		},
	})
}
