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
		out = append(out, extensionFinding(RuleExtensionRequiredAdded, Breaking, uri, extensionPointer(le.index, "required"), before, true))
	}
	return out
}

// checkExtensionRequiredRemoved reports an extension declared by both cards
// that is no longer required (the requirement was dropped, the extension
// stays). A required extension that disappears is extension-removed.
func checkExtensionRequiredRemoved(pinned, live *Card) []Finding {
	var out []Finding
	retained(extensionsByURI(pinned), extensionsByURI(live), func(uri string, pe, le indexedExtension) {
		if pe.Required && !le.Required {
			out = append(out, extensionFinding(RuleExtensionRequiredRemoved, Info, uri, extensionPointer(le.index, "required"), true, false))
		}
	})
	return out
}
