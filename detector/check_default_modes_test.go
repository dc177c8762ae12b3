package detector

import "testing"

func TestCheckDefaultInputModes(t *testing.T) {
	runCheck(t, "checkDefaultInputModes(pinned, live)", checkDefaultInputModes, []checkCase{
		{
			name:   "narrowed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultInputModes = []string{"text/plain"} }),
			want: []Finding{{
				Rule: RuleDefaultInputModesChanged, Severity: Breaking, Path: "/defaultInputModes",
				Before: []string{"text/plain", "application/json"}, After: []string{"text/plain"},
				Message: `default input modes no longer accept "application/json"`,
			}},
		},
		{
			name:   "widened",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultInputModes = append(c.DefaultInputModes, "image/png") }),
			want: []Finding{{
				Rule: RuleDefaultInputModesChanged, Severity: Info, Path: "/defaultInputModes",
				Before: []string{"text/plain", "application/json"}, After: []string{"text/plain", "application/json", "image/png"},
				Message: `default input modes now also accept "image/png"`,
			}},
		},
		{
			name:   "replaced",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultInputModes = []string{"text/plain", "application/xml"} }),
			want: []Finding{{
				Rule: RuleDefaultInputModesChanged, Severity: Breaking, Path: "/defaultInputModes",
				Before: []string{"text/plain", "application/json"}, After: []string{"text/plain", "application/xml"},
				Message: `default input modes no longer accept "application/json" and now accept "application/xml"`,
			}},
		},
		{
			name:   "reordered, legacy spelling and duplicates",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultInputModes = []string{"data", "text", "text/plain"} }),
		},
	})
}

func TestCheckDefaultOutputModes(t *testing.T) {
	runCheck(t, "checkDefaultOutputModes(pinned, live)", checkDefaultOutputModes, []checkCase{
		{
			name:   "widened",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultOutputModes = []string{"application/json", "text/html"} }),
			want: []Finding{{
				Rule: RuleDefaultOutputModesChanged, Severity: Warning, Path: "/defaultOutputModes",
				Before: []string{"application/json"}, After: []string{"application/json", "text/html"},
				Message: `default output modes now also include "text/html", which the pinned card did not declare`,
			}},
		},
		{
			name:   "narrowed to nothing",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultOutputModes = nil }),
			want: []Finding{{
				Rule: RuleDefaultOutputModesChanged, Severity: Breaking, Path: "/defaultOutputModes",
				Before: []string{"application/json"}, After: []string{},
				Message: `default output modes no longer include "application/json"`,
			}},
		},
		{
			name:   "replaced",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultOutputModes = []string{"text/markdown"} }),
			want: []Finding{{
				Rule: RuleDefaultOutputModesChanged, Severity: Breaking, Path: "/defaultOutputModes",
				Before: []string{"application/json"}, After: []string{"text/markdown"},
				Message: `default output modes no longer include "application/json" and now include "text/markdown"`,
			}},
		},
		{
			name:   "case and parameters",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.DefaultOutputModes = []string{"Application/JSON; charset=utf-8"} }),
		},
	})
}
