package detector

import (
	"strconv"
	"strings"
)

// checkCardVersion reports a change of the card's version field.
func checkCardVersion(pinned, live *Card) []Finding {
	if pinned.Version == live.Version {
		return nil
	}
	return []Finding{versionFinding(RuleCardVersionChanged, Info, pinned, live,
		"before", quote(pinned.Version), "after", quote(live.Version))}
}

// versionFinding is a finding of rule at the card's version field.
func versionFinding(rule string, sev Severity, pinned, live *Card, kv ...string) Finding {
	return newFinding(rule, "", sev, pointer("version"), pinned.Version, live.Version, kv...)
}

// checkVersionBump reports a structural change with the version unchanged
// (caches keyed on version serve the stale card), facet by facet, so a change
// no other rule locates still counts.
func checkVersionBump(pinned, live *Card) []Finding {
	if pinned.Version != live.Version {
		return nil
	}
	pf, lf := structure(pinned), structure(live)
	var changed []string
	for i, name := range structureFacets {
		if pf[i] != lf[i] {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return []Finding{versionFinding(RuleContentChangedWithoutVersion, Warning, pinned, live,
		"facets", strings.Join(changed, ", "), "version", quote(live.Version))}
}

var structureFacets = [...]string{"interfaces", "capabilities", "extensions", "default modes", "skills", "security"}

// structure is a canonical projection of all but descriptive text, one
// string per facet.
func structure(c *Card) [len(structureFacets)]string {
	var ends [len(structureFacets)]int
	b := make([]byte, 0, len(c.Raw)+256)
	str := func(s string) { b = append(b, s...); b = append(b, 0) }
	list := func(ss []string) {
		b = strconv.AppendInt(b, int64(len(ss)), 10)
		b = append(b, 0)
		for _, s := range ss {
			str(s)
		}
	}
	flag := func(v bool) { b = strconv.AppendBool(b, v); b = append(b, 0) }
	reqs := func(rs []SecurityRequirement) {
		cr := canonicalRequirements(rs)
		b = strconv.AppendInt(b, int64(len(cr)), 10)
		b = append(b, 0)
		for _, r := range cr {
			str(r.key)
		}
	}
	next := func(i int) { ends[i] = len(b) }

	for _, g := range groupInterfaces(c.Interfaces).order {
		str(g.norm)
		str(g.binding)
		str(g.tenant)
		list(normalizeVersions(g.versions))
	}
	next(0)

	caps := c.Capabilities
	flag(caps.Streaming)
	flag(caps.PushNotifications)
	flag(caps.ExtendedAgentCard)
	flag(caps.StateTransitionHistory)
	next(1)

	exts := extensionsByURI(c)
	for _, uri := range sortedKeys(exts) {
		str(uri)
		flag(exts[uri].Required)
		str(exts[uri].Params)
	}
	next(2)

	list(normalizeModes(c.DefaultInputModes))
	list(normalizeModes(c.DefaultOutputModes))
	next(3)

	for _, s := range skillsByID(c) {
		str(s.ID)
		list(normalizeModes(c.InputModes(s)))
		list(normalizeModes(c.OutputModes(s)))
		reqs(skillRequirements(c, s))
	}
	next(4)

	for _, name := range sortedKeys(c.SecuritySchemes) {
		s := c.SecuritySchemes[name]
		str(name)
		str(s.Type)
		str(strings.ToLower(s.Scheme))
		str(s.BearerFormat)
		loc := strings.ToLower(s.Location)
		str(loc)
		if loc == "header" {
			str(strings.ToLower(s.Name))
		} else {
			str(s.Name)
		}
		str(s.OpenIDConnectURL)
		str(s.OAuth2MetadataURL)
		for _, fn := range sortedKeys(s.Flows) {
			f := s.Flows[fn]
			str(fn)
			str(f.AuthorizationURL)
			str(f.TokenURL)
			str(f.RefreshURL)
			str(f.DeviceAuthorizationURL)
			list(sortedKeys(f.Scopes))
		}
		b = append(b, 1)
	}
	reqs(c.SecurityRequirements)
	next(5)

	all := string(b)
	var out [len(structureFacets)]string
	start := 0
	for i, end := range ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}
