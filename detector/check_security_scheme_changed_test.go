package detector

import "testing"

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
	runCheck(t, "checkSecuritySchemeChanged(pinned, live)", checkSecuritySchemeChanged, []checkCase{
		{
			name:   "bearer becomes oauth2 under the same name",
			pinned: testCard(),
			live:   withScheme("bearer", testCard().SecuritySchemes["oauth"]),
			want: []Finding{{
				Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/bearer",
				Before: bearer, After: oauth,
				Message: `security scheme "bearer" changed: type "http" → "oauth2"`, Scheme: "bearer",
			}},
		},
		{
			name:   "bearer format and auth scheme",
			pinned: testCard(),
			live:   withScheme("bearer", SecurityScheme{Type: "http", Scheme: "basic"}),
			want: []Finding{{
				Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/bearer",
				Before: bearer, After: map[string]string{"type": "http", "scheme": "basic"},
				Message: `security scheme "bearer" changed: scheme "bearer" → "basic"; bearerFormat "JWT" → ""`, Scheme: "bearer",
			}},
		},
		{
			name:   "token URL moved",
			pinned: testCard(),
			live: modified(func(c *Card) {
				f := c.SecuritySchemes["oauth"].Flows["clientCredentials"]
				f.TokenURL = "https://login.example.com/token"
				c.SecuritySchemes["oauth"].Flows["clientCredentials"] = f
			}),
			want: []Finding{{
				Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/oauth",
				Before: oauth,
				After: map[string]string{
					"type":                             "oauth2",
					"flows/clientCredentials/tokenUrl": "https://login.example.com/token",
					"flows/clientCredentials/scopes":   "read translate",
				},
				Message: `security scheme "oauth" changed: flows/clientCredentials/tokenUrl "https://auth.example.com/token" → "https://login.example.com/token"`,
				Scheme:  "oauth",
			}},
		},
		{
			name:   "flow replaced",
			pinned: testCard(),
			live: withScheme("oauth", SecurityScheme{Type: "oauth2", Flows: map[string]OAuthFlow{
				"deviceCode": {DeviceAuthorizationURL: "https://auth.example.com/device", TokenURL: "https://auth.example.com/token"},
			}}),
			want: []Finding{{
				Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/oauth",
				Before: oauth,
				After: map[string]string{
					"type": "oauth2",
					"flows/deviceCode/deviceAuthorizationUrl": "https://auth.example.com/device",
					"flows/deviceCode/tokenUrl":               "https://auth.example.com/token",
					"flows/deviceCode/scopes":                 "",
				},
				Message: `security scheme "oauth" changed: flow clientCredentials removed`, Scheme: "oauth",
			}},
		},
		{
			name:   "api key moves from header to query",
			pinned: testCard(),
			live:   withScheme("key", SecurityScheme{Type: "apiKey", Name: "x-api-key", Location: "query"}),
			want: []Finding{{
				Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/key",
				Before:  map[string]string{"type": "apiKey", "name": "X-API-Key", "location": "header"},
				After:   map[string]string{"type": "apiKey", "name": "x-api-key", "location": "query"},
				Message: `security scheme "key" changed: location "header" → "query"; name "X-API-Key" → "x-api-key"`,
				Scheme:  "key",
			}},
		},
		{
			name:   "OpenID Connect URL",
			pinned: withScheme("oidc", SecurityScheme{Type: "openIdConnect", OpenIDConnectURL: "https://a.example/.well-known/openid-configuration"}),
			live:   withScheme("oidc", SecurityScheme{Type: "openIdConnect", OpenIDConnectURL: "https://b.example/.well-known/openid-configuration"}),
			want: []Finding{{
				Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/oidc",
				Before:  map[string]string{"type": "openIdConnect", "openIdConnectUrl": "https://a.example/.well-known/openid-configuration"},
				After:   map[string]string{"type": "openIdConnect", "openIdConnectUrl": "https://b.example/.well-known/openid-configuration"},
				Message: `security scheme "oidc" changed: openIdConnectUrl "https://a.example/.well-known/openid-configuration" → "https://b.example/.well-known/openid-configuration"`,
				Scheme:  "oidc",
			}},
		},
		{
			name:   "a new flow, a new scope and a new description pass",
			pinned: testCard(),
			live: modified(func(c *Card) {
				s := c.SecuritySchemes["oauth"]
				s.Description = "Corporate SSO"
				s.Flows["clientCredentials"].Scopes["admin"] = "Administer"
				s.Flows["authorizationCode"] = OAuthFlow{AuthorizationURL: "https://auth.example.com/authorize", TokenURL: "https://auth.example.com/token"}
				c.SecuritySchemes["oauth"] = s
			}),
		},
		{
			name:   "header name and auth scheme case",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.SecuritySchemes["key"] = SecurityScheme{Type: "apiKey", Name: "x-api-key", Location: "Header"}
				c.SecuritySchemes["bearer"] = SecurityScheme{Type: "http", Scheme: "Bearer", BearerFormat: "JWT"}
			}),
		},
	})
}
