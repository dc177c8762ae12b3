package detector

import "testing"

func TestCheckOAuthScopeRemoved(t *testing.T) {
	runCheck(t, "checkOAuthScopeRemoved(pinned, live)", checkOAuthScopeRemoved, []checkCase{
		{
			name:   "scope withdrawn",
			pinned: testCard(),
			live:   modified(func(c *Card) { delete(c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes, "translate") }),
			want: []Finding{{
				Rule: RuleOAuthScopeRemoved, Severity: Breaking,
				Path:    "/securitySchemes/oauth/oauth2SecurityScheme/flows/clientCredentials/scopes/translate",
				Before:  "translate",
				Message: `security scheme "oauth" no longer offers scope "translate" in flow "clientCredentials"`,
				Scheme:  "oauth",
				Scope:   "translate",
			}},
		},
		{
			name: "URL scope, escaped in the path",
			pinned: modified(func(c *Card) {
				c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["https://www.googleapis.com/auth/maps"] = "Maps"
			}),
			live: testCard(),
			want: []Finding{{
				Rule: RuleOAuthScopeRemoved, Severity: Breaking,
				Path:    "/securitySchemes/oauth/oauth2SecurityScheme/flows/clientCredentials/scopes/https:~1~1www.googleapis.com~1auth~1maps",
				Before:  "https://www.googleapis.com/auth/maps",
				Message: `security scheme "oauth" no longer offers scope "https://www.googleapis.com/auth/maps" in flow "clientCredentials"`,
				Scheme:  "oauth",
				Scope:   "https://www.googleapis.com/auth/maps",
			}},
		},
		{
			name:   "scope added",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["admin"] = "" }),
		},
		{
			name:   "flow removed is security-scheme-changed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.SecuritySchemes["oauth"] = SecurityScheme{Type: "oauth2"} }),
		},
		{
			name:   "scheme removed is security-scheme-removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { delete(c.SecuritySchemes, "oauth") }),
		},
	})
}
