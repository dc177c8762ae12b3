package detector

import (
	"strings"
	"testing"
)

func TestCheckDescriptiveText(t *testing.T) {
	long := strings.Repeat("Plans routes. ", 10)
	runCheck(t, "checkDescriptiveText(pinned, live)", checkDescriptiveText, []checkCase{
		{
			name: "card fields",
			live: modified(func(c *Card) {
				c.Name = "Planner"
				c.Provider.URL = "https://geo.example.com"
				c.IconURL = ""
			}),
			want: []Finding{
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/name",
					Before: "Route Planner", After: "Planner",
					Message: `card name changed from "Route Planner" to "Planner"`,
				},
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/provider/url",
					Before: "https://example.com", After: "https://geo.example.com",
					Message: `provider URL changed from "https://example.com" to "https://geo.example.com"`,
				},
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/iconUrl",
					Before: "https://planner.example.com/icon.png", After: "",
					Message: `icon URL changed from "https://planner.example.com/icon.png" to ""`,
				},
			},
		},
		{
			name: "long description is shortened in the message only",
			live: modified(func(c *Card) { c.Description = long }),
			want: []Finding{{
				Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/description",
				Before: "Plans routes and draws maps.", After: long,
				Message: `card description changed from "Plans routes and draws maps." to "` + long[:60] + `…"`,
			}},
		},
		{
			name: "skill text",
			live: modified(func(c *Card) {
				c.Skills[1].Name = "Translator"
				c.Skills[1].Tags = []string{"language", "i18n"}
				c.Skills[0].Examples = nil
			}),
			want: []Finding{
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/skills/0/examples",
					Before: []string{"Summarize this report"}, After: []string{},
					Message: `examples of skill "summarize" changed from "Summarize this report" to none`, Skill: "summarize",
				},
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/skills/1/name",
					Before: "Translate", After: "Translator",
					Message: `name of skill "translate" changed from "Translate" to "Translator"`, Skill: "translate",
				},
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/skills/1/tags",
					Before: []string{"text", "language"}, After: []string{"language", "i18n"},
					Message: `tags of skill "translate" changed from "text", "language" to "language", "i18n"`, Skill: "translate",
				},
			},
		},
		{
			name: "scheme, scope and extension descriptions",
			live: modified(func(c *Card) {
				b := c.SecuritySchemes["bearer"]
				b.Description = "JWT bearer token"
				c.SecuritySchemes["bearer"] = b
				c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["read"] = "Read routes"
				c.Capabilities.Extensions[0].Description = "Tracing"
			}),
			want: []Finding{
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/securitySchemes/bearer/httpAuthSecurityScheme/description",
					Before: "Bearer token", After: "JWT bearer token",
					Message: `description of security scheme "bearer" changed from "Bearer token" to "JWT bearer token"`, Scheme: "bearer",
				},
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info,
					Path:   "/securitySchemes/oauth/oauth2SecurityScheme/flows/clientCredentials/scopes/read",
					Before: "Read access", After: "Read routes",
					Message: `description of scope "read" of security scheme "oauth" changed from "Read access" to "Read routes"`, Scheme: "oauth",
				},
				{
					Rule: RuleDescriptiveTextChanged, Severity: Info, Path: "/capabilities/extensions/0/description",
					Before: "Request tracing", After: "Tracing",
					Message: `description of extension "https://ext.example.com/trace/v1" changed from "Request tracing" to "Tracing"`,
				},
			},
		},
		{
			name: "tags and examples reordered",
			live: modified(func(c *Card) { c.Skills[0].Tags = []string{"summary", "text", "text"} }),
		},
		{
			name: "text of a removed skill",
			live: modified(func(c *Card) { c.Skills = c.Skills[1:]; c.Skills[0].Index = 0 }),
		},
	})
}
