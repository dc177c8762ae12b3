package detector

// checkOAuthScopeRemoved reports, per OAuth 2.0 scheme and flow present in both
// cards, every scope the pinned flow offered that the live flow does not: a
// client requesting it is refused a token. Scope additions are not reported
// (a client that does not ask for a scope is unaffected); a removed scheme or
// flow is reported by security-scheme-removed/-changed, not scope by scope.
// The path points into the pinned card.
func checkOAuthScopeRemoved(pinned, live *Card) []Finding {
	var out []Finding
	for _, name := range sortedKeys(pinned.SecuritySchemes) {
		p := pinned.SecuritySchemes[name]
		l, ok := live.SecuritySchemes[name]
		if !ok || p.Type != "oauth2" || l.Type != "oauth2" {
			continue
		}
		for _, fn := range sortedKeys(p.Flows) {
			lf, ok := l.Flows[fn]
			if !ok {
				continue
			}
			for _, scope := range sortedKeys(p.Flows[fn].Scopes) {
				if _, ok := lf.Scopes[scope]; ok {
					continue
				}
				out = append(out, Finding{
					Rule:     RuleOAuthScopeRemoved,
					Severity: Breaking,
					Path:     schemePointer(name, p, "flows", fn, "scopes", scope),
					Before:   scope,
					Message:  render(RuleOAuthScopeRemoved, "scheme", quote(name), "flow", quote(fn), "scope", quote(scope)),
					Scheme:   name,
					Scope:    scope,
				})
			}
		}
	}
	return out
}
