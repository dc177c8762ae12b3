package detector

// checkExtensionRemoved reports every extension URI of the pinned card that
// the live card no longer declares, required or not: a client that activated
// it loses the behaviour it planned with.
func checkExtensionRemoved(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range onlyIn(p, l) {
		out = append(out, extensionFinding(RuleExtensionRemoved, Breaking, uri, extensionPointer(p[uri].index), uri, nil))
	}
	return out
}

// checkExtensionAdded reports every optional extension URI the live card
// declares that the pinned card did not. A new required extension is
// extension-required-added instead.
func checkExtensionAdded(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range onlyIn(l, p) {
		if !l[uri].Required {
			out = append(out, extensionFinding(RuleExtensionAdded, Info, uri, extensionPointer(l[uri].index), nil, uri))
		}
	}
	return out
}

// extensionFinding is a finding of rule about the extension uri at path,
// going from before to after.
func extensionFinding(rule string, sev Severity, uri, path string, before, after any) Finding {
	return Finding{
		Rule:      rule,
		Severity:  sev,
		Path:      path,
		Before:    before,
		After:     after,
		Message:   render(rule, "uri", quote(uri)),
		Extension: uri,
	}
}
