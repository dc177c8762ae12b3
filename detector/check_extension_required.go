package detector

// checkExtensionRequiredAdded reports an extension now required that was
// optional (Before false) or absent (nil): the agent refuses clients without
// it (-32008).
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

// checkExtensionRequiredRemoved reports a retained extension no longer
// required.
func checkExtensionRequiredRemoved(pinned, live *Card) []Finding {
	var out []Finding
	retained(extensionsByURI(pinned), extensionsByURI(live), func(uri string, pe, le indexedExtension) {
		if pe.Required && !le.Required {
			out = append(out, extensionFinding(RuleExtensionRequiredRemoved, Info, uri, extensionPointer(le.index, "required"), true, false))
		}
	})
	return out
}
