package detector

// checkExtensionRemoved reports every extension URI of the pinned card that
// the live card no longer declares, required or not: a client that activated
// it loses the behaviour it planned with.
func checkExtensionRemoved(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range sortedKeys(p) {
		if _, ok := l[uri]; ok {
			continue
		}
		out = append(out, Finding{
			Rule:      RuleExtensionRemoved,
			Severity:  Breaking,
			Path:      extensionPointer(p[uri].index),
			Before:    uri,
			Message:   render(RuleExtensionRemoved, "uri", quote(uri)),
			Extension: uri,
		})
	}
	return out
}

// checkExtensionAdded reports every optional extension URI the live card
// declares that the pinned card did not. A new required extension is
// extension-required-added instead.
func checkExtensionAdded(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range sortedKeys(l) {
		if _, ok := p[uri]; ok || l[uri].Required {
			continue
		}
		out = append(out, Finding{
			Rule:      RuleExtensionAdded,
			Severity:  Info,
			Path:      extensionPointer(l[uri].index),
			After:     uri,
			Message:   render(RuleExtensionAdded, "uri", quote(uri)),
			Extension: uri,
		})
	}
	return out
}
