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
	// changed is the finding for scheme name, from before to after.
	changed := func(name string, before, after map[string]string, message string) []Finding {
		return []Finding{{
			Rule: RuleSecuritySchemeChanged, Severity: Breaking, Path: "/securitySchemes/" + name,
			Before: before, After: after, Message: message, Scheme: name,
		}}
	}
	runCheck(t, "checkSecuritySchemeChanged(pinned, live)", checkSecuritySchemeChanged, []checkCase{
		{
			name:   "bearer becomes oauth2 under the same name",
			pinned: testCard(),
			live:   withScheme("bearer", testCard().SecuritySchemes["oauth"]),
			want:   changed("bearer", bearer, oauth, `security scheme "bearer" changed: type "http" → "oauth2"`),
		},
		{
			name:   "bearer format and auth scheme",
			pinned: testCard(),
			live:   withScheme("bearer", SecurityScheme{Type: "http", Scheme: "basic"}),
			want: changed("bearer", bearer, map[string]string{"type": "http", "scheme": "basic"},
				`security scheme "bearer" changed: scheme "bearer" → "basic"; bearerFormat "JWT" → ""`),
		},
		{
			name:   "token URL moved",
			pinned: testCard(),
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
			name:   "flow replaced",
			pinned: testCard(),
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
			name:   "api key moves from header to query",
			pinned: testCard(),
			live:   withScheme("key", SecurityScheme{Type: "apiKey", Name: "x-api-key", Location: "query"}),
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
