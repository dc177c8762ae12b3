package detector

// checkExtensionRemoved reports every pinned extension URI the live card no
// longer declares, required or not.
func checkExtensionRemoved(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range onlyIn(p, l) {
		out = append(out, extensionFinding(RuleExtensionRemoved, Breaking, uri, extensionPointer(p[uri].index), uri, nil))
	}
	return out
}

// checkExtensionAdded reports every new optional extension URI (a new
// required one is extension-required-added).
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

func extensionFinding(rule string, sev Severity, uri, path string, before, after any) Finding {
	f := newFinding(rule, "", sev, path, before, after, "uri", quote(uri))
	f.Extension = uri
	return f
}
