package detector

import "testing"

func TestCheckSecurityRequirements(t *testing.T) {
	pinnedReqs := []map[string][]string{{"bearer": {}}, {"oauth": {"read"}}}
	runCheck(t, "checkSecurityRequirements(pinned, live)", checkSecurityRequirements, []checkCase{
		{
			name:   "bearer alternative withdrawn",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.SecurityRequirements = c.SecurityRequirements[1:] }),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/securityRequirements",
				Before: pinnedReqs, After: []map[string][]string{{"oauth": {"read"}}},
				Message: `card security requirements changed from "bearer" or "oauth"["read"] to "oauth"["read"]`,
			}},
		},
		{
			name:   "scope added to a requirement",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"bearer": {}}, {"oauth": {"read", "translate"}}}
			}),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/securityRequirements",
				Before: pinnedReqs, After: []map[string][]string{{"bearer": {}}, {"oauth": {"read", "translate"}}},
				Message: `card security requirements changed from "bearer" or "oauth"["read"] to "bearer" or "oauth"["read", "translate"]`,
			}},
		},
		{
			name:   "alternative added relaxes",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.SecurityRequirements = append(c.SecurityRequirements, SecurityRequirement{"key": nil})
			}),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Info, Path: "/securityRequirements",
				Before: pinnedReqs, After: []map[string][]string{{"bearer": {}}, {"oauth": {"read"}}, {"key": {}}},
				Message: `card security requirements relaxed from "bearer" or "oauth"["read"] to "bearer" or "key" or "oauth"["read"]`,
			}},
		},
		{
			name:   "authentication dropped",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.SecurityRequirements = nil }),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Info, Path: "/securityRequirements",
				Before: pinnedReqs, After: []map[string][]string{},
				Message: `card security requirements relaxed from "bearer" or "oauth"["read"] to no authentication`,
			}},
		},
		{
			name:   "skill now needs another scope",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Skills[1].SecurityRequirements = []SecurityRequirement{{"oauth": {"translate", "admin"}}}
			}),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/skills/1/securityRequirements",
				Before:  []map[string][]string{{"oauth": {"translate"}}},
				After:   []map[string][]string{{"oauth": {"translate", "admin"}}},
				Message: `security requirements of skill "translate" changed from "oauth"["translate"] to "oauth"["admin", "translate"]`,
				Skill:   "translate",
			}},
		},
		{
			name:   "skill requirement dropped: the card's now apply",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].SecurityRequirements = nil }),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/skills/1/securityRequirements",
				Before:  []map[string][]string{{"oauth": {"translate"}}},
				After:   pinnedReqs,
				Message: `security requirements of skill "translate" changed from "oauth"["translate"] to "bearer" or "oauth"["read"]`,
				Skill:   "translate",
			}},
		},
		{
			name: "skill requirement dropped for card ones that admit it",
			pinned: modified(func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"bearer": {}}, {"oauth": {"translate"}}}
			}),
			live: modified(func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"bearer": {}}, {"oauth": {"translate"}}}
				c.Skills[1].SecurityRequirements = []SecurityRequirement{}
			}),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Info, Path: "/skills/1/securityRequirements",
				Before:  []map[string][]string{{"oauth": {"translate"}}},
				After:   []map[string][]string{{"bearer": {}}, {"oauth": {"translate"}}},
				Message: `security requirements of skill "translate" relaxed from "oauth"["translate"] to "bearer" or "oauth"["translate"]`,
				Skill:   "translate",
			}},
		},
		{
			name:   "skill requirement dropped, equal to the card's",
			pinned: modified(func(c *Card) { c.SecurityRequirements = []SecurityRequirement{{"oauth": {"translate"}}} }),
			live: modified(func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"oauth": {"translate"}}}
				c.Skills[1].SecurityRequirements = nil
			}),
		},
		{
			name:   "skill declares its own where it inherited",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].SecurityRequirements = []SecurityRequirement{{"oauth": {"read"}}} }),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/skills/0/securityRequirements",
				Before:  pinnedReqs,
				After:   []map[string][]string{{"oauth": {"read"}}},
				Message: `security requirements of skill "summarize" changed from "bearer" or "oauth"["read"] to "oauth"["read"]`,
				Skill:   "summarize",
			}},
		},
		{
			name:   "skill that required no authentication inherits the card's",
			pinned: modified(func(c *Card) { c.Skills[0].SecurityRequirements = []SecurityRequirement{{}} }),
			live:   testCard(),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/skills/0/securityRequirements",
				Before:  []map[string][]string{{}},
				After:   pinnedReqs,
				Message: `security requirements of skill "summarize" changed from no authentication to "bearer" or "oauth"["read"]`,
				Skill:   "summarize",
			}},
		},
		{
			name:   "order of alternatives and scopes, duplicates, empty alternative",
			pinned: modified(func(c *Card) { c.Skills[0].SecurityRequirements = []SecurityRequirement{{}} }),
			live: modified(func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"oauth": {"read", "read"}}, {"bearer": nil}, {"bearer": {}}}
				c.Skills[0].SecurityRequirements = []SecurityRequirement{{}, {}}
			}),
		},
		{
			name:   "removed skill is not compared",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = c.Skills[:1] }),
		},
	})
}
