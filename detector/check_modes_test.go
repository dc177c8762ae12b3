package detector

import "testing"

// modeCase is a mode check's case: live is testCard modified by live (and
// pinned by pinned, if set); a zero sev wants no finding.
type modeCase struct {
	name          string
	pinned, live  func(*Card)
	sev           Severity
	path          string
	before, after []string
	msg, skill    string
}

func TestModeChecks(t *testing.T) {
	for _, tc := range []struct {
		call  string
		check func(p, l *Card) []Finding
		rule  string
		cases []modeCase
	}{
		{"checkSkillInputModes", checkSkillInputModes, RuleSkillInputModesChanged, []modeCase{
			{name: "inherited defaults narrowed", live: func(c *Card) { c.DefaultInputModes = []string{"application/json"} },
				sev: Breaking, path: "/defaultInputModes", before: []string{"text/plain", "application/json"}, after: []string{"application/json"},
				msg: `skill "summarize" no longer accepts "text/plain"`, skill: "summarize"},
			{name: "own modes widened by a wildcard", live: func(c *Card) { c.Skills[1].InputModes = []string{"text/*"} },
				sev: Info, path: "/skills/1/inputModes", before: []string{"text/plain"}, after: []string{"text/*"},
				msg: `skill "translate" now also accepts "text/*"`, skill: "translate"},
			{name: "own modes replaced", live: func(c *Card) { c.Skills[1].InputModes = []string{"application/pdf"} },
				sev: Breaking, path: "/skills/1/inputModes", before: []string{"text/plain"}, after: []string{"application/pdf"},
				msg: `skill "translate" no longer accepts "text/plain" and now accepts "application/pdf"`, skill: "translate"},
			{name: "skill stops inheriting and declares fewer modes", live: func(c *Card) { c.Skills[0].InputModes = []string{"text/plain"} },
				sev: Breaking, path: "/skills/0/inputModes", before: []string{"text/plain", "application/json"}, after: []string{"text/plain"},
				msg: `skill "summarize" no longer accepts "application/json"`, skill: "summarize"},
			{name: "skill declares exactly what it inherited",
				live: func(c *Card) { c.Skills[0].InputModes = []string{"application/json", "text/plain"} }},
			{name: "legacy text, case and parameters",
				pinned: func(c *Card) { c.Skills[1].InputModes = []string{"text"} },
				live:   func(c *Card) { c.Skills[1].InputModes = []string{"Text/Plain; charset=utf-8"} }},
			{name: "declared empty", live: func(c *Card) { c.Skills[1].InputModes = []string{} },
				sev: Breaking, path: "/skills/1/inputModes", before: []string{"text/plain"}, after: []string{},
				msg: `skill "translate" no longer accepts "text/plain"`, skill: "translate"},
			{name: "removed skill is skill-removed, not a mode change", live: func(c *Card) { c.Skills = c.Skills[:1] }},
		}},
		{"checkSkillOutputModes", checkSkillOutputModes, RuleSkillOutputModesChanged, []modeCase{
			{name: "output type added", live: func(c *Card) { c.Skills[1].OutputModes = []string{"text/plain", "image/*", "application/pdf"} },
				sev: Warning, path: "/skills/1/outputModes", before: []string{"text/plain", "image/*"}, after: []string{"text/plain", "image/*", "application/pdf"},
				msg: `skill "translate" may now produce "application/pdf", which the pinned card did not declare`, skill: "translate"},
			{name: "wildcard narrowed to one subtype", live: func(c *Card) { c.Skills[1].OutputModes = []string{"text/plain", "image/png"} },
				sev: Breaking, path: "/skills/1/outputModes", before: []string{"text/plain", "image/*"}, after: []string{"text/plain", "image/png"},
				msg: `skill "translate" no longer produces "image/*"`, skill: "translate"},
			{name: "inherited defaults widened", live: func(c *Card) { c.DefaultOutputModes = []string{"application/json", "text/csv"} },
				sev: Warning, path: "/defaultOutputModes", before: []string{"application/json"}, after: []string{"application/json", "text/csv"},
				msg: `skill "summarize" may now produce "text/csv", which the pinned card did not declare`, skill: "summarize"},
			{name: "a subtype the wildcard already covered",
				live: func(c *Card) { c.Skills[1].OutputModes = []string{"image/*", "image/png", "text/plain"} }},
		}},
		{"checkDefaultInputModes", checkDefaultInputModes, RuleDefaultInputModesChanged, []modeCase{
			{name: "narrowed", live: func(c *Card) { c.DefaultInputModes = []string{"text/plain"} },
				sev: Breaking, path: "/defaultInputModes", before: []string{"text/plain", "application/json"}, after: []string{"text/plain"},
				msg: `default input modes no longer accept "application/json"`},
			{name: "widened", live: func(c *Card) { c.DefaultInputModes = append(c.DefaultInputModes, "image/png") },
				sev: Info, path: "/defaultInputModes", before: []string{"text/plain", "application/json"}, after: []string{"text/plain", "application/json", "image/png"},
				msg: `default input modes now also accept "image/png"`},
			{name: "replaced", live: func(c *Card) { c.DefaultInputModes = []string{"text/plain", "application/xml"} },
				sev: Breaking, path: "/defaultInputModes", before: []string{"text/plain", "application/json"}, after: []string{"text/plain", "application/xml"},
				msg: `default input modes no longer accept "application/json" and now accept "application/xml"`},
			{name: "reordered, legacy spelling and duplicates",
				live: func(c *Card) { c.DefaultInputModes = []string{"data", "text", "text/plain"} }},
		}},
		{"checkDefaultOutputModes", checkDefaultOutputModes, RuleDefaultOutputModesChanged, []modeCase{
			{name: "widened", live: func(c *Card) { c.DefaultOutputModes = []string{"application/json", "text/html"} },
				sev: Warning, path: "/defaultOutputModes", before: []string{"application/json"}, after: []string{"application/json", "text/html"},
				msg: `default output modes now also include "text/html", which the pinned card did not declare`},
			{name: "narrowed to nothing", live: func(c *Card) { c.DefaultOutputModes = nil },
				sev: Breaking, path: "/defaultOutputModes", before: []string{"application/json"}, after: []string{},
				msg: `default output modes no longer include "application/json"`},
			{name: "replaced", live: func(c *Card) { c.DefaultOutputModes = []string{"text/markdown"} },
				sev: Breaking, path: "/defaultOutputModes", before: []string{"application/json"}, after: []string{"text/markdown"},
				msg: `default output modes no longer include "application/json" and now include "text/markdown"`},
			{name: "case and parameters",
				live: func(c *Card) { c.DefaultOutputModes = []string{"Application/JSON; charset=utf-8"} }},
		}},
	} {
		var cases []checkCase
		for _, mc := range tc.cases {
			cc := checkCase{name: mc.name, live: modified(mc.live)}
			if mc.pinned != nil {
				cc.pinned = modified(mc.pinned)
			}
			if mc.sev != 0 {
				cc.want = []Finding{{Rule: tc.rule, Severity: mc.sev, Path: mc.path,
					Before: mc.before, After: mc.after, Message: mc.msg, Skill: mc.skill}}
			}
			cases = append(cases, cc)
		}
		t.Run(tc.call, func(t *testing.T) { runCheck(t, tc.call+"(pinned, live)", tc.check, cases) })
	}
}
