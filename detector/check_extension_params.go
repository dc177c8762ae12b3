package detector

import "encoding/json"

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
