package detector

import (
	"encoding/json"
	"testing"
)

const traceURI = "https://ext.example.com/trace/v1"

func requireTrace(c *Card) { c.Capabilities.Extensions[0].Required = true }

// extFindings is the finding of rule at /capabilities/extensions/path.
func extFindings(rule string, sev Severity, path string, before, after any, uri, msg string) []Finding {
	return []Finding{{Rule: rule, Severity: sev, Path: "/capabilities/extensions/" + path,
		Before: before, After: after, Message: msg, Extension: uri}}
}

func TestCheckExtensionRemoved(t *testing.T) {
	runCheck(t, "checkExtensionRemoved(pinned, live)", checkExtensionRemoved, []checkCase{
		{
			name: "optional extension removed",
			live: modified(func(c *Card) { c.Capabilities.Extensions = nil }),
			want: extFindings(RuleExtensionRemoved, Breaking, "0", traceURI, nil, traceURI,
				`extension "https://ext.example.com/trace/v1" is no longer declared`),
		},
		{
			name:   "required extension removed",
			pinned: modified(requireTrace),
			live:   modified(func(c *Card) { c.Capabilities.Extensions = []Extension{} }),
			want: extFindings(RuleExtensionRemoved, Breaking, "0", traceURI, nil, traceURI,
				`extension "https://ext.example.com/trace/v1" is no longer declared`),
		},
		{
			name: "extension moved in the list",
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append([]Extension{{URI: "urn:x"}}, c.Capabilities.Extensions...)
			}),
		},
	})
}

func TestCheckExtensionAdded(t *testing.T) {
	runCheck(t, "checkExtensionAdded(pinned, live)", checkExtensionAdded, []checkCase{
		{
			name: "optional extension added",
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x"})
			}),
			want: extFindings(RuleExtensionAdded, Info, "1", nil, "urn:x", "urn:x",
				`optional extension "urn:x" is now declared`),
		},
		{
			name: "required extension added is extension-required-added",
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x", Required: true})
			}),
		},
	})
}

func TestCheckExtensionRequiredAdded(t *testing.T) {
	runCheck(t, "checkExtensionRequiredAdded(pinned, live)", checkExtensionRequiredAdded, []checkCase{
		{
			name: "optional extension becomes required",
			live: modified(requireTrace),
			want: extFindings(RuleExtensionRequiredAdded, Breaking, "0/required", false, true, traceURI,
				`extension "https://ext.example.com/trace/v1" is now required: clients that do not support it will be refused`),
		},
		{
			name: "new required extension",
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x", Required: true})
			}),
			want: extFindings(RuleExtensionRequiredAdded, Breaking, "1/required", nil, true, "urn:x",
				`extension "urn:x" is now required: clients that do not support it will be refused`),
		},
		{
			name:   "still required",
			pinned: modified(requireTrace),
			live:   modified(requireTrace),
		},
	})
}

func TestCheckExtensionRequiredRemoved(t *testing.T) {
	runCheck(t, "checkExtensionRequiredRemoved(pinned, live)", checkExtensionRequiredRemoved, []checkCase{
		{
			name:   "required extension becomes optional",
			pinned: modified(requireTrace),
			want: extFindings(RuleExtensionRequiredRemoved, Info, "0/required", true, false, traceURI,
				`extension "https://ext.example.com/trace/v1" is no longer required`),
		},
		{
			name:   "required extension removed is extension-removed",
			pinned: modified(requireTrace),
			live:   modified(func(c *Card) { c.Capabilities.Extensions = nil }),
		},
	})
}

func TestCheckExtensionParams(t *testing.T) {
	runCheck(t, "checkExtensionParams(pinned, live)", checkExtensionParams, []checkCase{
		{
			name: "params changed",
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Params = `{"level":"full"}` }),
			want: extFindings(RuleExtensionParamsChanged, Warning, "0/params", json.RawMessage(`{"level":"basic"}`), json.RawMessage(`{"level":"full"}`), traceURI,
				`parameters of extension "https://ext.example.com/trace/v1" changed`),
		},
		{
			name: "params dropped",
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Params = "" }),
			want: extFindings(RuleExtensionParamsChanged, Warning, "0/params", json.RawMessage(`{"level":"basic"}`), nil, traceURI,
				`parameters of extension "https://ext.example.com/trace/v1" changed`),
		},
		{
			name: "only the description changed",
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Description = "Tracing" }),
		},
	})
}
