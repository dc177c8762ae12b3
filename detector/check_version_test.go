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
			name: "bumped",
			live: modified(func(c *Card) { c.Version = "1.3.0" }),
			want: changed("1.3.0", `card version changed from "1.2.0" to "1.3.0"`),
		},
		{
			name: "dropped",
			live: modified(func(c *Card) { c.Version = "" }),
			want: changed("", `card version changed from "1.2.0" to ""`),
		},
		{
			name: "content changed, version kept",
			live: modified(noStreaming),
		},
	})
}

func TestCheckVersionBump(t *testing.T) {
	warn := func(facets string) []Finding {
		return []Finding{{
			Rule: RuleContentChangedWithoutVersion, Severity: Warning, Path: "/version",
			Before: "1.2.0", After: "1.2.0",
			Message: `card content changed (` + facets + `) but its version is still "1.2.0"`,
		}}
	}
	runCheck(t, "checkVersionBump(pinned, live)", checkVersionBump, []checkCase{
		{
			name: "skill modes mutated",
			live: modified(func(c *Card) { c.Skills[1].OutputModes = []string{"text/plain"} }),
			want: warn("skills"),
		},
		{
			name: "defaults changed, inherited by a skill",
			live: modified(func(c *Card) { c.DefaultOutputModes = []string{"text/plain"} }),
			want: warn("default modes, skills"),
		},
		{
			name: "capability, interface and scheme",
			live: modified(func(c *Card) {
				c.Capabilities.Streaming = false
				c.Interfaces = c.Interfaces[:1]
				delete(c.SecuritySchemes, "key")
			}),
			want: warn("interfaces, capabilities, security"),
		},
		{
			name: "changes no other rule locates",
			live: modified(func(c *Card) {
				c.Capabilities.StateTransitionHistory = true
				c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["admin"] = "Administer"
				c.Capabilities.Extensions[0].Params = `{"level":"full"}`
			}),
			want: warn("capabilities, extensions, security"),
		},
		{
			name:   "no version on either side",
			pinned: modified(func(c *Card) { c.Version = "" }),
			live:   modified(func(c *Card) { c.Version = ""; c.Skills = c.Skills[:1] }),
			want: []Finding{{
				Rule: RuleContentChangedWithoutVersion, Severity: Warning, Path: "/version",
				Before: "", After: "",
				Message: `card content changed (skills) but its version is still ""`,
			}},
		},
		{
			name: "version bumped",
			live: modified(func(c *Card) { c.Version = "1.3.0"; c.Capabilities.Streaming = false }),
		},
		{
			name: "descriptive text only",
			live: modified(func(c *Card) {
				c.Name = "Planner"
				c.Skills[0].Description = "Summarizes."
				c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["read"] = "Read everything"
			}),
		},
		{
			name: "equivalent spellings",
			live: modified(func(c *Card) {
				c.DefaultInputModes = []string{"TEXT", "application/json; charset=utf-8", "text/plain"}
				c.Interfaces[0].ProtocolVersion = "1.0.0"
				c.SecurityRequirements = []SecurityRequirement{{"oauth": {"read"}}, {"bearer": nil}}
				c.Skills[0].Index, c.Skills[1].Index = 1, 0
				c.Interfaces[1].URL = "HTTPS://Planner.Example.com:443/grpc"
			}),
		},
		{
			name:   "skill requirements dropped for equal card ones",
			pinned: modified(func(c *Card) { c.SecurityRequirements = []SecurityRequirement{{"oauth": {"translate"}}} }),
			live: modified(func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"oauth": {"translate"}}}
				c.Skills[1].SecurityRequirements = nil
			}),
		},
	})
}
