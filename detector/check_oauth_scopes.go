package detector

// checkOAuthScopeRemoved reports every scope a retained flow of a retained
// scheme no longer offers (a removed scheme or flow is another rule's).
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
