package detector

import "strings"

func checkSecuritySchemeRemoved(pinned, live *Card) []Finding {
	var out []Finding
	for _, name := range onlyIn(pinned.SecuritySchemes, live.SecuritySchemes) {
		s := pinned.SecuritySchemes[name]
		out = append(out, schemeFinding(RuleSecuritySchemeRemoved, Breaking, name, s, schemeSummary(s), nil))
	}
	return out
}

// checkSecuritySchemeAdded: declaring a scheme requires nothing of a client
// (security-requirements-changed reports it becoming required).
func checkSecuritySchemeAdded(pinned, live *Card) []Finding {
	var out []Finding
	for _, name := range onlyIn(live.SecuritySchemes, pinned.SecuritySchemes) {
		s := live.SecuritySchemes[name]
		out = append(out, schemeFinding(RuleSecuritySchemeAdded, Info, name, s, nil, schemeSummary(s)))
	}
	return out
}

// schemeFinding is a finding about scheme name, declared as s in the card the
// path points into.
func schemeFinding(rule string, sev Severity, name string, s SecurityScheme, before, after any, kv ...string) Finding {
	f := newFinding(rule, "", sev, schemePointer(name, s), before, after, append([]string{"scheme", quote(name)}, kv...)...)
	f.Scheme = name
	return f
}

// checkSecuritySchemeChanged reports a retained scheme changed in what a
// client's credentials depend on: type, HTTP scheme, bearer format, API key
// name and location, OpenID Connect and OAuth metadata URLs, and the URLs of
// each pinned flow (a flow removed is a change, one added is not).
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

// schemeChanges lists how l differs from p; a type change alone.
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
// that are set ("flows/<flow>/<field>"), and each flow's scopes.
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

// checkOAuthScopeRemoved reports every scope a retained flow of a retained
// scheme no longer offers (a removed scheme or flow is another rule's).
func checkOAuthScopeRemoved(pinned, live *Card) []Finding {
	var out []Finding
	retained(pinned.SecuritySchemes, live.SecuritySchemes, func(name string, p, l SecurityScheme) {
		retainedFlows(p, l, func(fn string, pf, lf OAuthFlow) {
			for _, scope := range onlyIn(pf.Scopes, lf.Scopes) {
				f := newFinding(RuleOAuthScopeRemoved, "", Breaking, schemePointer(name, p, "flows", fn, "scopes", scope), scope, nil,
					"scheme", quote(name), "flow", quote(fn), "scope", quote(scope))
				f.Scheme, f.Scope = name, scope
				out = append(out, f)
			}
		})
	})
	return out
}
