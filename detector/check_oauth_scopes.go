package detector

// checkOAuthScopeRemoved reports, per OAuth 2.0 scheme and flow present in both
// cards, every scope the pinned flow offered that the live flow does not: a
// client requesting it is refused a token. Scope additions are not reported
// (a client that does not ask for a scope is unaffected); a removed scheme or
// flow is reported by security-scheme-removed/-changed, not scope by scope.
// The path points into the pinned card.
func checkOAuthScopeRemoved(pinned, live *Card) []Finding {
	var out []Finding
	retained(pinned.SecuritySchemes, live.SecuritySchemes, func(name string, p, l SecurityScheme) {
		retainedFlows(p, l, func(fn string, pf, lf OAuthFlow) {
			for _, scope := range onlyIn(pf.Scopes, lf.Scopes) {
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
		})
	})
	return out
}
