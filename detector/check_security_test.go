package detector

import "testing"

func TestCheckSecuritySchemeRemoved(t *testing.T) {
	runCheck(t, "checkSecuritySchemeRemoved(pinned, live)", checkSecuritySchemeRemoved, []checkCase{
		{
			name: "api key scheme removed",
			live: modified(func(c *Card) { delete(c.SecuritySchemes, "key") }),
			want: []Finding{{
				Rule: RuleSecuritySchemeRemoved, Severity: Breaking, Path: "/securitySchemes/key",
				Before:  map[string]string{"type": "apiKey", "name": "X-API-Key", "location": "header"},
				Message: `security scheme "key" is no longer declared`, Scheme: "key",
			}},
		},
		{
			name:   "renamed scheme, escaped in the path",
			pinned: modified(func(c *Card) { c.SecuritySchemes["corp/sso"] = SecurityScheme{Type: "mutualTLS"} }),
			want: []Finding{{
				Rule: RuleSecuritySchemeRemoved, Severity: Breaking, Path: "/securitySchemes/corp~1sso",
				Before:  map[string]string{"type": "mutualTLS"},
				Message: `security scheme "corp/sso" is no longer declared`, Scheme: "corp/sso",
			}},
		},
		{
			name: "scheme added",
			live: modified(func(c *Card) { c.SecuritySchemes["mtls"] = SecurityScheme{Type: "mutualTLS"} }),
		},
	})
}

func TestCheckSecuritySchemeAdded(t *testing.T) {
	runCheck(t, "checkSecuritySchemeAdded(pinned, live)", checkSecuritySchemeAdded, []checkCase{
		{
			name: "mutual TLS added",
			live: modified(func(c *Card) { c.SecuritySchemes["mtls"] = SecurityScheme{Type: "mutualTLS"} }),
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
			name: "scheme removed",
			live: modified(func(c *Card) { delete(c.SecuritySchemes, "key") }),
		},
	})
}

func TestCheckSecuritySchemeChanged(t *testing.T) {
	bearer := map[string]string{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
	oauth := map[string]string{
		"type":                             "oauth2",
		"flows/clientCredentials/tokenUrl": "https://auth.example.com/token",
		"flows/clientCredentials/scopes":   "read translate",
	}
	withScheme := func(name string, s SecurityScheme) *Card {
		return modified(func(c *Card) { c.SecuritySchemes[name] = s })
	}
	// changed is the finding for scheme name, from before to after.
	changed := func(name string, before, after map[string]string, message string) []Finding {
		return []Finding{{
			Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/" + name,
			Before: before, After: after, Message: message, Scheme: name,
		}}
	}
	runCheck(t, "checkSecuritySchemeChanged(pinned, live)", checkSecuritySchemeChanged, []checkCase{
		{
			name: "bearer becomes oauth2 under the same name",
			live: withScheme("bearer", testCard().SecuritySchemes["oauth"]),
			want: changed("bearer", bearer, oauth, `security scheme "bearer" changed: type "http" → "oauth2"`),
		},
		{
			name: "bearer format and auth scheme",
			live: withScheme("bearer", SecurityScheme{Type: "http", Scheme: "basic"}),
			want: changed("bearer", bearer, map[string]string{"type": "http", "scheme": "basic"},
				`security scheme "bearer" changed: scheme "bearer" → "basic"; bearerFormat "JWT" → ""`),
		},
		{
			name: "token URL moved",
			live: modified(func(c *Card) {
				f := c.SecuritySchemes["oauth"].Flows["clientCredentials"]
				f.TokenURL = "https://login.example.com/token"
				c.SecuritySchemes["oauth"].Flows["clientCredentials"] = f
			}),
			want: changed("oauth", oauth, map[string]string{
				"type":                             "oauth2",
				"flows/clientCredentials/tokenUrl": "https://login.example.com/token",
				"flows/clientCredentials/scopes":   "read translate",
			}, `security scheme "oauth" changed: flows/clientCredentials/tokenUrl "https://auth.example.com/token" → "https://login.example.com/token"`),
		},
		{
			name: "flow replaced",
			live: withScheme("oauth", SecurityScheme{Type: "oauth2", Flows: map[string]OAuthFlow{
				"deviceCode": {DeviceAuthorizationURL: "https://auth.example.com/device", TokenURL: "https://auth.example.com/token"},
			}}),
			want: changed("oauth", oauth, map[string]string{
				"type": "oauth2",
				"flows/deviceCode/deviceAuthorizationUrl": "https://auth.example.com/device",
				"flows/deviceCode/tokenUrl":               "https://auth.example.com/token",
				"flows/deviceCode/scopes":                 "",
			}, `security scheme "oauth" changed: flow clientCredentials removed`),
		},
		{
			name: "api key moves from header to query",
			live: withScheme("key", SecurityScheme{Type: "apiKey", Name: "x-api-key", Location: "query"}),
			want: changed("key",
				map[string]string{"type": "apiKey", "name": "X-API-Key", "location": "header"},
				map[string]string{"type": "apiKey", "name": "x-api-key", "location": "query"},
				`security scheme "key" changed: location "header" → "query"; name "X-API-Key" → "x-api-key"`),
		},
		{
			name:   "OpenID Connect URL",
			pinned: withScheme("oidc", SecurityScheme{Type: "openIdConnect", OpenIDConnectURL: "https://a.example/.well-known/openid-configuration"}),
			live:   withScheme("oidc", SecurityScheme{Type: "openIdConnect", OpenIDConnectURL: "https://b.example/.well-known/openid-configuration"}),
			want: changed("oidc",
				map[string]string{"type": "openIdConnect", "openIdConnectUrl": "https://a.example/.well-known/openid-configuration"},
				map[string]string{"type": "openIdConnect", "openIdConnectUrl": "https://b.example/.well-known/openid-configuration"},
				`security scheme "oidc" changed: openIdConnectUrl "https://a.example/.well-known/openid-configuration" → "https://b.example/.well-known/openid-configuration"`),
		},
		{
			name: "a new flow, a new scope and a new description pass",
			live: modified(func(c *Card) {
				s := c.SecuritySchemes["oauth"]
				s.Description = "Corporate SSO"
				s.Flows["clientCredentials"].Scopes["admin"] = "Administer"
				s.Flows["authorizationCode"] = OAuthFlow{AuthorizationURL: "https://auth.example.com/authorize", TokenURL: "https://auth.example.com/token"}
				c.SecuritySchemes["oauth"] = s
			}),
		},
		{
			name: "header name and auth scheme case",
			live: modified(func(c *Card) {
				c.SecuritySchemes["key"] = SecurityScheme{Type: "apiKey", Name: "x-api-key", Location: "Header"}
				c.SecuritySchemes["bearer"] = SecurityScheme{Type: "http", Scheme: "Bearer", BearerFormat: "JWT"}
			}),
		},
	})
}

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
			name: "scope withdrawn",
			live: modified(func(c *Card) { delete(c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes, "translate") }),
			want: removed("translate", "translate"),
		},
		{
			name: "URL scope, escaped in the path",
			pinned: modified(func(c *Card) {
				c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["https://www.googleapis.com/auth/maps"] = "Maps"
			}),
			want: removed("https://www.googleapis.com/auth/maps", "https:~1~1www.googleapis.com~1auth~1maps"),
		},
		{
			name: "scope added",
			live: modified(func(c *Card) { c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["admin"] = "" }),
		},
		{
			name: "flow removed is security-scheme-changed",
			live: modified(func(c *Card) { c.SecuritySchemes["oauth"] = SecurityScheme{Type: "oauth2"} }),
		},
		{
			name: "scheme removed is security-scheme-removed",
			live: modified(func(c *Card) { delete(c.SecuritySchemes, "oauth") }),
		},
	})
}

func TestCheckSecurityRequirements(t *testing.T) {
	pinnedReqs := []map[string][]string{{"bearer": {}}, {"oauth": {"read"}}}
	runCheck(t, "checkSecurityRequirements(pinned, live)", checkSecurityRequirements, []checkCase{
		{
			name: "bearer alternative withdrawn",
			live: modified(func(c *Card) { c.SecurityRequirements = c.SecurityRequirements[1:] }),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Breaking, Path: "/securityRequirements",
				Before: pinnedReqs, After: []map[string][]string{{"oauth": {"read"}}},
				Message: `card security requirements changed from "bearer" or "oauth"["read"] to "oauth"["read"]`,
			}},
		},
		{
			name: "scope added to a requirement",
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
			name: "alternative added relaxes",
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
			name: "authentication dropped",
			live: modified(func(c *Card) { c.SecurityRequirements = nil }),
			want: []Finding{{
				Rule: RuleSecurityRequirementsChanged, Severity: Info, Path: "/securityRequirements",
				Before: pinnedReqs, After: []map[string][]string{},
				Message: `card security requirements relaxed from "bearer" or "oauth"["read"] to no authentication`,
			}},
		},
		{
			name: "skill now needs another scope",
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
			name: "skill requirement dropped: the card's now apply",
			live: modified(func(c *Card) { c.Skills[1].SecurityRequirements = nil }),
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
			name: "skill declares its own where it inherited",
			live: modified(func(c *Card) { c.Skills[0].SecurityRequirements = []SecurityRequirement{{"oauth": {"read"}}} }),
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
			name: "removed skill is not compared",
			live: modified(func(c *Card) { c.Skills = c.Skills[:1] }),
		},
	})
}
