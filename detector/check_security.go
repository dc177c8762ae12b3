package detector

import (
	"maps"
	"slices"
	"strings"
)

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

// checkSecurityRequirements reports a change of the card's requirements and
// of those that apply to each retained skill (its own, else the card's).
// Requirements compare as sets; an empty list is one empty alternative. A
// change is breaking unless it only relaxes: every pinned alternative still
// satisfies some live one (same schemes or fewer, same scopes or fewer).
func checkSecurityRequirements(pinned, live *Card) []Finding {
	var out []Finding
	if f, ok := requirementsFinding(pinned.SecurityRequirements, live.SecurityRequirements, "/card"); ok {
		f.Path = pointer("securityRequirements")
		out = append(out, f)
	}
	retainedSkills(pinned, live, func(p, l Skill) {
		if sameRequirements(p.SecurityRequirements, l.SecurityRequirements) {
			return
		}
		f, ok := requirementsFinding(skillRequirements(pinned, p), skillRequirements(live, l), "/skill", "skill", quote(l.ID))
		if !ok {
			return
		}
		f.Path = skillPointer(l, "securityRequirements")
		if len(l.SecurityRequirements) == 0 {
			f.Path = skillPointer(p, "securityRequirements")
		}
		f.Skill = l.ID
		out = append(out, f)
	})
	return out
}

func skillRequirements(c *Card, s Skill) []SecurityRequirement {
	if len(s.SecurityRequirements) > 0 {
		return s.SecurityRequirements
	}
	return c.SecurityRequirements
}

// effectiveRequirements: those of the skill with id in c, else the card's.
func effectiveRequirements(c *Card, skillID string) []SecurityRequirement {
	s, _ := skillByID(c, skillID)
	return skillRequirements(c, s)
}

func requirementsFinding(before, after []SecurityRequirement, variant string, kv ...string) (Finding, bool) {
	if sameRequirements(before, after) {
		return Finding{}, false
	}
	pb, pa := canonicalRequirements(before), canonicalRequirements(after)
	if slices.EqualFunc(pb, pa, func(a, b requirement) bool { return a.key == b.key }) {
		return Finding{}, false
	}
	sev := Info
	variant += "-relaxed"
	for _, p := range pb {
		if !slices.ContainsFunc(pa, func(l requirement) bool { return l.within(p) }) {
			sev = Breaking
			variant = strings.TrimSuffix(variant, "-relaxed")
			break
		}
	}
	kv = append(kv, "before", requirementsText(pb), "after", requirementsText(pa))
	return newFinding(RuleSecurityRequirementsChanged, variant, sev, "",
		plainRequirements(before), plainRequirements(after), kv...), true
}

// sameRequirements: written identically (a fast path).
func sameRequirements(a, b []SecurityRequirement) bool {
	return slices.EqualFunc(a, b, func(x, y SecurityRequirement) bool {
		return maps.EqualFunc(x, y, func(s, t []string) bool { return slices.Equal(s, t) })
	})
}

// requirement is one alternative in canonical form.
type requirement struct {
	schemes []string
	scopes  [][]string
	key     string
}

// within reports whether r asks for no more schemes or scopes than o.
func (r requirement) within(o requirement) bool {
	for i, s := range r.schemes {
		j := slices.Index(o.schemes, s)
		if j < 0 {
			return false
		}
		for _, scope := range r.scopes[i] {
			if !slices.Contains(o.scopes[j], scope) {
				return false
			}
		}
	}
	return true
}

// canonicalRequirements sorts and de-duplicates; empty is one empty
// alternative.
func canonicalRequirements(rs []SecurityRequirement) []requirement {
	if len(rs) == 0 {
		return []requirement{{}}
	}
	out := make([]requirement, 0, len(rs))
	for _, r := range rs {
		var c requirement
		var key strings.Builder
		for _, name := range sortedKeys(r) {
			scopes := slices.Compact(slices.Sorted(slices.Values(r[name])))
			c.schemes = append(c.schemes, name)
			c.scopes = append(c.scopes, scopes)
			key.WriteString(name)
			key.WriteByte(0)
			for _, s := range scopes {
				key.WriteString(s)
				key.WriteByte(1)
			}
			key.WriteByte(2)
		}
		c.key = key.String()
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b requirement) int { return strings.Compare(a.key, b.key) })
	return slices.CompactFunc(out, func(a, b requirement) bool { return a.key == b.key })
}

// requirementsText renders `"oauth"["read"] and "key" or "bearer"`.
func requirementsText(rs []requirement) string {
	alts := make([]string, len(rs))
	for i, r := range rs {
		if len(r.schemes) == 0 {
			alts[i] = "no authentication"
			continue
		}
		parts := make([]string, len(r.schemes))
		for j, s := range r.schemes {
			parts[j] = quote(s)
			if len(r.scopes[j]) > 0 {
				parts[j] += "[" + quoteList(r.scopes[j]) + "]"
			}
		}
		alts[i] = strings.Join(parts, " and ")
	}
	return strings.Join(alts, " or ")
}

// plainRequirements is a never-nil copy for Before/After.
func plainRequirements(rs []SecurityRequirement) []map[string][]string {
	out := make([]map[string][]string, len(rs))
	for i, r := range rs {
		m := make(map[string][]string, len(r))
		for k, v := range r {
			m[k] = plainStrings(v)
		}
		out[i] = m
	}
	return out
}
