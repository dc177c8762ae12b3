package detector

// checkSecuritySchemeRemoved reports every security scheme name of the pinned
// card that the live card no longer declares: a client authenticating with it
// will be refused.
func checkSecuritySchemeRemoved(pinned, live *Card) []Finding {
	var out []Finding
	for _, name := range sortedKeys(pinned.SecuritySchemes) {
		if _, ok := live.SecuritySchemes[name]; ok {
			continue
		}
		out = append(out, Finding{
			Rule:     RuleSecuritySchemeRemoved,
			Severity: Breaking,
			Path:     schemePointer(name, pinned.SecuritySchemes[name]),
			Before:   schemeSummary(pinned.SecuritySchemes[name]),
			Message:  render(RuleSecuritySchemeRemoved, "scheme", quote(name)),
			Scheme:   name,
		})
	}
	return out
}

// checkSecuritySchemeAdded reports every security scheme name the live card
// declares that the pinned card did not. Declaring a scheme requires nothing of
// a client; security-requirements-changed reports it becoming required.
func checkSecuritySchemeAdded(pinned, live *Card) []Finding {
	var out []Finding
	for _, name := range sortedKeys(live.SecuritySchemes) {
		if _, ok := pinned.SecuritySchemes[name]; ok {
			continue
		}
		out = append(out, Finding{
			Rule:     RuleSecuritySchemeAdded,
			Severity: Info,
			Path:     schemePointer(name, live.SecuritySchemes[name]),
			After:    schemeSummary(live.SecuritySchemes[name]),
			Message:  render(RuleSecuritySchemeAdded, "scheme", quote(name)),
			Scheme:   name,
		})
	}
	return out
}
