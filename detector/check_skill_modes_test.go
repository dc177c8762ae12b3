package detector

import "testing"

func TestCheckSkillInputModes(t *testing.T) {
	runCheck(t, "checkSkillInputModes(pinned, live)", checkSkillInputModes, []checkCase{
		{
			name:   "inherited defaults narrowed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultInputModes = []string{"application/json"} }),
			want: []Finding{{
				Rule: RuleSkillInputModesChanged, Severity: Breaking, Path: "/defaultInputModes",
				Before: []string{"text/plain", "application/json"}, After: []string{"application/json"},
				Message: `skill "summarize" no longer accepts "text/plain"`, Skill: "summarize",
			}},
		},
		{
			name:   "own modes widened by a wildcard",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].InputModes = []string{"text/*"} }),
			want: []Finding{{
				Rule: RuleSkillInputModesChanged, Severity: Info, Path: "/skills/1/inputModes",
				Before: []string{"text/plain"}, After: []string{"text/*"},
				Message: `skill "translate" now also accepts "text/*"`, Skill: "translate",
			}},
		},
		{
			name:   "own modes replaced",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].InputModes = []string{"application/pdf"} }),
			want: []Finding{{
				Rule: RuleSkillInputModesChanged, Severity: Breaking, Path: "/skills/1/inputModes",
				Before: []string{"text/plain"}, After: []string{"application/pdf"},
				Message: `skill "translate" no longer accepts "text/plain" and now accepts "application/pdf"`, Skill: "translate",
			}},
		},
		{
			name:   "skill stops inheriting and declares fewer modes",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].InputModes = []string{"text/plain"} }),
			want: []Finding{{
				Rule: RuleSkillInputModesChanged, Severity: Breaking, Path: "/skills/0/inputModes",
				Before: []string{"text/plain", "application/json"}, After: []string{"text/plain"},
				Message: `skill "summarize" no longer accepts "application/json"`, Skill: "summarize",
			}},
		},
		{
			name:   "skill declares exactly what it inherited",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].InputModes = []string{"application/json", "text/plain"} }),
		},
		{
			name:   "legacy text, case and parameters",
			pinned: modified(func(c *Card) { c.Skills[1].InputModes = []string{"text"} }),
			live:   modified(func(c *Card) { c.Skills[1].InputModes = []string{"Text/Plain; charset=utf-8"} }),
		},
		{
			name:   "declared empty",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].InputModes = []string{} }),
			want: []Finding{{
				Rule: RuleSkillInputModesChanged, Severity: Breaking, Path: "/skills/1/inputModes",
				Before: []string{"text/plain"}, After: []string{},
				Message: `skill "translate" no longer accepts "text/plain"`, Skill: "translate",
			}},
		},
		{
			name:   "removed skill is skill-removed, not a mode change",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = c.Skills[:1] }),
		},
	})
}

func TestCheckSkillOutputModes(t *testing.T) {
	runCheck(t, "checkSkillOutputModes(pinned, live)", checkSkillOutputModes, []checkCase{
		{
			name:   "output type added",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].OutputModes = []string{"text/plain", "image/*", "application/pdf"} }),
			want: []Finding{{
				Rule: RuleSkillOutputModesChanged, Severity: Warning, Path: "/skills/1/outputModes",
				Before: []string{"text/plain", "image/*"}, After: []string{"text/plain", "image/*", "application/pdf"},
				Message: `skill "translate" may now produce "application/pdf", which the pinned card did not declare`, Skill: "translate",
			}},
		},
		{
			name:   "wildcard narrowed to one subtype",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].OutputModes = []string{"text/plain", "image/png"} }),
			want: []Finding{{
				Rule: RuleSkillOutputModesChanged, Severity: Breaking, Path: "/skills/1/outputModes",
				Before: []string{"text/plain", "image/*"}, After: []string{"text/plain", "image/png"},
				Message: `skill "translate" no longer produces "image/*"`, Skill: "translate",
			}},
		},
		{
			name:   "inherited defaults widened",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultOutputModes = []string{"application/json", "text/csv"} }),
			want: []Finding{{
				Rule: RuleSkillOutputModesChanged, Severity: Warning, Path: "/defaultOutputModes",
				Before: []string{"application/json"}, After: []string{"application/json", "text/csv"},
				Message: `skill "summarize" may now produce "text/csv", which the pinned card did not declare`, Skill: "summarize",
			}},
		},
		{
			name:   "a subtype the wildcard already covered",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[1].OutputModes = []string{"image/*", "image/png", "text/plain"} }),
		},
	})
}
