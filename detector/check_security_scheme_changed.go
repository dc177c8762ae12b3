package detector

import (
	"strings"
)

// checkSecuritySchemeChanged reports a security scheme declared under the same
// name by both cards whose definition changed in a way a client's credentials
// depend on: type, HTTP auth scheme (case-insensitive), bearer format, API key
// name and location (a header name case-insensitively), OpenID Connect URL,
// OAuth 2.0 metadata URL, and the URLs of each pinned OAuth flow (a flow that
// disappears is a change, a new flow is not). Descriptions are descriptive
// text; scopes are oauth-scope-removed. Before/After summarise the compared
// fields of each side.
func checkSecuritySchemeChanged(pinned, live *Card) []Finding {
	var out []Finding
	retained(pinned.SecuritySchemes, live.SecuritySchemes, func(name string, p, l SecurityScheme) {
		if changes := schemeChanges(p, l); len(changes) > 0 {
			out = append(out, schemeFinding(RuleSecuritySchemeChanged, Breaking, name, l, schemeSummary(p), schemeSummary(l),
				"fields", strings.Join(changes, "; ")))
		}
	})
	return out
}

// schemeChanges describes how l differs from p, one entry per changed field,
// in a fixed order. A type change is reported alone.
func schemeChanges(p, l SecurityScheme) []string {
	var out []string
	field := func(name, before, after string, equal func(a, b string) bool) {
		if !equal(before, after) {
			out = append(out, name+" "+quote(before)+" → "+quote(after))
		}
	}
	exact := func(a, b string) bool { return a == b }
	field("type", p.Type, l.Type, exact)
	if len(out) > 0 {
		return out
	}
	field("scheme", p.Scheme, l.Scheme, strings.EqualFold)
	field("bearerFormat", p.BearerFormat, l.BearerFormat, exact)
	field("location", p.Location, l.Location, strings.EqualFold)
	nameEqual := exact
	if strings.EqualFold(p.Location, "header") && strings.EqualFold(l.Location, "header") {
		nameEqual = strings.EqualFold // HTTP header names are case-insensitive
	}
	field("name", p.Name, l.Name, nameEqual)
	field("openIdConnectUrl", p.OpenIDConnectURL, l.OpenIDConnectURL, exact)
	field("oauth2MetadataUrl", p.OAuth2MetadataURL, l.OAuth2MetadataURL, exact)
	for _, fn := range sortedKeys(p.Flows) {
		lf, ok := l.Flows[fn]
		if !ok {
			out = append(out, "flow "+fn+" removed")
			continue
		}
		pf := p.Flows[fn]
		field("flows/"+fn+"/authorizationUrl", pf.AuthorizationURL, lf.AuthorizationURL, exact)
		field("flows/"+fn+"/tokenUrl", pf.TokenURL, lf.TokenURL, exact)
		field("flows/"+fn+"/refreshUrl", pf.RefreshURL, lf.RefreshURL, exact)
		field("flows/"+fn+"/deviceAuthorizationUrl", pf.DeviceAuthorizationURL, lf.DeviceAuthorizationURL, exact)
	}
	return out
}

// schemeSummary is the Before/After value of a scheme: its compared fields
// that are set, keyed by their v1.0 names (flow fields as
// "flows/<flow>/<field>"), plus the sorted scopes of each flow as
// "flows/<flow>/scopes" (space-separated). Descriptions are left out.
func schemeSummary(s SecurityScheme) map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("type", s.Type)
	set("scheme", s.Scheme)
	set("bearerFormat", s.BearerFormat)
	set("name", s.Name)
	set("location", s.Location)
	set("openIdConnectUrl", s.OpenIDConnectURL)
	set("oauth2MetadataUrl", s.OAuth2MetadataURL)
	for fn, f := range s.Flows {
		set("flows/"+fn+"/authorizationUrl", f.AuthorizationURL)
		set("flows/"+fn+"/tokenUrl", f.TokenURL)
		set("flows/"+fn+"/refreshUrl", f.RefreshURL)
		set("flows/"+fn+"/deviceAuthorizationUrl", f.DeviceAuthorizationURL)
		m["flows/"+fn+"/scopes"] = strings.Join(sortedKeys(f.Scopes), " ")
	}
	return m
}
