package detector

import "encoding/json"

// checkExtensionParams reports an extension declared by both cards whose
// params changed (compared as canonical JSON, so formatting and key order do
// not count). A client configured from the old params may now misbehave.
func checkExtensionParams(pinned, live *Card) []Finding {
	p, l := extensionsByURI(pinned), extensionsByURI(live)
	var out []Finding
	for _, uri := range sortedKeys(p) {
		le, ok := l[uri]
		if !ok || p[uri].Params == le.Params {
			continue
		}
		out = append(out, Finding{
			Rule:      RuleExtensionParamsChanged,
			Severity:  Warning,
			Path:      extensionPointer(le.index, "params"),
			Before:    paramsValue(p[uri].Params),
			After:     paramsValue(le.Params),
			Message:   render(RuleExtensionParamsChanged, "uri", quote(uri)),
			Extension: uri,
		})
	}
	return out
}

// paramsValue turns canonical params JSON into a Before/After value that
// marshals as the params themselves: nil when absent, the text when it is not
// valid JSON.
func paramsValue(params string) any {
	if params == "" {
		return nil
	}
	if !json.Valid([]byte(params)) {
		return params
	}
	return json.RawMessage(params)
}
