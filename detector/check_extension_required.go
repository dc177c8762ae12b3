package detector

// checkExtensionRequiredAdded reports an extension that is required in the
// live card and was optional or absent in the pinned one: the agent now
// refuses clients that do not support it (-32008). Before is the pinned
// required flag, or nil when the extension is new.
func checkExtensionRequiredAdded(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range sortedKeys(l) {
		le := l[uri]
		if !le.Required {
			continue
		}
		var before any
		if pe, ok := p[uri]; ok {
			if pe.Required {
				continue
			}
			before = false
		}
		out = append(out, Finding{
			Rule:      RuleExtensionRequiredAdded,
			Severity:  Breaking,
			Path:      extensionPointer(le.index, "required"),
			Before:    before,
			After:     true,
			Message:   render(RuleExtensionRequiredAdded, "uri", quote(uri)),
			Extension: uri,
		})
	}
	return out
}

// checkExtensionRequiredRemoved reports an extension declared by both cards
// that is no longer required (the requirement was dropped, the extension
// stays). A required extension that disappears is extension-removed.
func checkExtensionRequiredRemoved(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range sortedKeys(p) {
		le, ok := l[uri]
		if !ok || !p[uri].Required || le.Required {
			continue
		}
		out = append(out, Finding{
			Rule:      RuleExtensionRequiredRemoved,
			Severity:  Info,
			Path:      extensionPointer(le.index, "required"),
			Before:    true,
			After:     false,
			Message:   render(RuleExtensionRequiredRemoved, "uri", quote(uri)),
			Extension: uri,
		})
	}
	return out
}
