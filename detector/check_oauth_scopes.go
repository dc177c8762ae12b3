package detector

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
