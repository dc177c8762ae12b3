package detector

import "encoding/json"

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

// checkExtensionParams reports a retained extension whose canonical params
// changed.
func checkExtensionParams(pinned, live *Card) []Finding {
	var out []Finding
	retained(extensionsByURI(pinned), extensionsByURI(live), func(uri string, pe, le indexedExtension) {
		if pe.Params != le.Params {
			out = append(out, extensionFinding(RuleExtensionParamsChanged, Warning, uri, extensionPointer(le.index, "params"),
				paramsValue(pe.Params), paramsValue(le.Params)))
		}
	})
	return out
}

// paramsValue is a Before/After value that marshals as the params.
func paramsValue(params string) any {
	if params == "" {
		return nil
	}
	if !json.Valid([]byte(params)) {
		return params
	}
	return json.RawMessage(params)
}
