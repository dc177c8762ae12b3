package detector

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
