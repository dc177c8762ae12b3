package detector

import "encoding/json"

// checkExtensionParams reports an extension declared by both cards whose
// params changed (compared as canonical JSON, so formatting and key order do
// not count). A client configured from the old params may now misbehave.
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
