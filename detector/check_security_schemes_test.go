package detector

import "testing"

func TestCheckSecuritySchemeRemoved(t *testing.T) {
	runCheck(t, "checkSecuritySchemeRemoved(pinned, live)", checkSecuritySchemeRemoved, []checkCase{
		{
			name:   "api key scheme removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { delete(c.SecuritySchemes, "key") }),
			want: []Finding{{
				Rule: RuleSecuritySchemeRemoved, Severity: Breaking, Path: "/securitySchemes/key",
				Before:  map[string]string{"type": "apiKey", "name": "X-API-Key", "location": "header"},
				Message: `security scheme "key" is no longer declared`, Scheme: "key",
			}},
		},
		{
			name:   "renamed scheme, escaped in the path",
			pinned: modified(func(c *Card) { c.SecuritySchemes["corp/sso"] = SecurityScheme{Type: "mutualTLS"} }),
			live:   testCard(),
			want: []Finding{{
				Rule: RuleSecuritySchemeRemoved, Severity: Breaking, Path: "/securitySchemes/corp~1sso",
				Before:  map[string]string{"type": "mutualTLS"},
				Message: `security scheme "corp/sso" is no longer declared`, Scheme: "corp/sso",
			}},
		},
		{
			name:   "scheme added",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.SecuritySchemes["mtls"] = SecurityScheme{Type: "mutualTLS"} }),
		},
	})
}

func TestCheckSecuritySchemeAdded(t *testing.T) {
	runCheck(t, "checkSecuritySchemeAdded(pinned, live)", checkSecuritySchemeAdded, []checkCase{
		{
			name:   "mutual TLS added",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.SecuritySchemes["mtls"] = SecurityScheme{Type: "mutualTLS"} }),
			want: []Finding{{
				Rule: RuleSecuritySchemeAdded, Severity: Info, Path: "/securitySchemes/mtls",
				After:   map[string]string{"type": "mutualTLS"},
				Message: `security scheme "mtls" is now declared`, Scheme: "mtls",
			}},
		},
		{
			name:   "first scheme on a card without any",
			pinned: modified(func(c *Card) { c.SecuritySchemes = nil }),
			live:   modified(func(c *Card) { c.SecuritySchemes = map[string]SecurityScheme{"key": c.SecuritySchemes["key"]} }),
			want: []Finding{{
				Rule: RuleSecuritySchemeAdded, Severity: Info, Path: "/securitySchemes/key",
				After:   map[string]string{"type": "apiKey", "name": "X-API-Key", "location": "header"},
				Message: `security scheme "key" is now declared`, Scheme: "key",
			}},
		},
		{
			name:   "scheme removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { delete(c.SecuritySchemes, "key") }),
		},
	})
}
