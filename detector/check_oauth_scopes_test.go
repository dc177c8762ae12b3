package detector

import "testing"

func TestCheckOAuthScopeRemoved(t *testing.T) {
	// removed is the finding for scope withdrawn from the clientCredentials
	// flow of the oauth scheme; path is the scope's path token.
	removed := func(scope, path string) []Finding {
		return []Finding{{
			Rule: RuleOAuthScopeRemoved, Severity: Breaking,
			Path:    "/securitySchemes/oauth/oauth2SecurityScheme/flows/clientCredentials/scopes/" + path,
			Before:  scope,
			Message: `security scheme "oauth" no longer offers scope "` + scope + `" in flow "clientCredentials"`,
			Scheme:  "oauth",
			Scope:   scope,
		}}
	}
	runCheck(t, "checkOAuthScopeRemoved(pinned, live)", checkOAuthScopeRemoved, []checkCase{
		{
			name:   "scope withdrawn",
			pinned: testCard(),
			live:   modified(func(c *Card) { delete(c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes, "translate") }),
			want:   removed("translate", "translate"),
		},
		{
			name: "URL scope, escaped in the path",
			pinned: modified(func(c *Card) {
				c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["https://www.googleapis.com/auth/maps"] = "Maps"
			}),
			live: testCard(),
			want: removed("https://www.googleapis.com/auth/maps", "https:~1~1www.googleapis.com~1auth~1maps"),
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
