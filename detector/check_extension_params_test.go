package detector

import (
	"encoding/json"
	"testing"
)

func TestCheckExtensionParams(t *testing.T) {
	runCheck(t, "checkExtensionParams(pinned, live)", checkExtensionParams, []checkCase{
		{
			name:   "params changed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Extensions[0].Params = `{"level":"full"}` }),
			want: []Finding{{
				Rule: RuleExtensionParamsChanged, Severity: Warning, Path: "/capabilities/extensions/0/params",
				Before: json.RawMessage(`{"level":"basic"}`), After: json.RawMessage(`{"level":"full"}`),
				Message:   `parameters of extension "https://ext.example.com/trace/v1" changed`,
				Extension: traceURI,
			}},
		},
		{
			name:   "params dropped",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Extensions[0].Params = "" }),
			want: []Finding{{
				Rule: RuleExtensionParamsChanged, Severity: Warning, Path: "/capabilities/extensions/0/params",
				Before:    json.RawMessage(`{"level":"basic"}`),
				Message:   `parameters of extension "https://ext.example.com/trace/v1" changed`,
				Extension: traceURI,
			}},
		},
		{
			name:   "only the description changed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Extensions[0].Description = "Tracing" }),
		},
	})
}
