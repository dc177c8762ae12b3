package detector

import (
	"encoding/json"
	"testing"
)

const traceURI = "https://ext.example.com/trace/v1"

func TestCheckExtensionRemoved(t *testing.T) {
	runCheck(t, "checkExtensionRemoved(pinned, live)", checkExtensionRemoved, []checkCase{
		{
			name: "optional extension removed",
			live: modified(func(c *Card) { c.Capabilities.Extensions = nil }),
			want: []Finding{{
				Rule: RuleExtensionRemoved, Severity: Breaking, Path: "/capabilities/extensions/0", Before: traceURI,
				Message:   `extension "https://ext.example.com/trace/v1" is no longer declared`,
				Extension: traceURI,
			}},
		},
		{
			name:   "required extension removed",
			pinned: modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
			live:   modified(func(c *Card) { c.Capabilities.Extensions = []Extension{} }),
			want: []Finding{{
				Rule: RuleExtensionRemoved, Severity: Breaking, Path: "/capabilities/extensions/0", Before: traceURI,
				Message:   `extension "https://ext.example.com/trace/v1" is no longer declared`,
				Extension: traceURI,
			}},
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
			want: []Finding{{
				Rule: RuleExtensionAdded, Severity: Info, Path: "/capabilities/extensions/1", After: "urn:x",
				Message:   `optional extension "urn:x" is now declared`,
				Extension: "urn:x",
			}},
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
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
			want: []Finding{{
				Rule: RuleExtensionRequiredAdded, Severity: Breaking, Path: "/capabilities/extensions/0/required",
				Before: false, After: true,
				Message:   `extension "https://ext.example.com/trace/v1" is now required: clients that do not support it will be refused`,
				Extension: traceURI,
			}},
		},
		{
			name: "new required extension",
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x", Required: true})
			}),
			want: []Finding{{
				Rule: RuleExtensionRequiredAdded, Severity: Breaking, Path: "/capabilities/extensions/1/required",
				After:     true,
				Message:   `extension "urn:x" is now required: clients that do not support it will be refused`,
				Extension: "urn:x",
			}},
		},
		{
			name:   "still required",
			pinned: modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
			live:   modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
		},
	})
}

func TestCheckExtensionRequiredRemoved(t *testing.T) {
	runCheck(t, "checkExtensionRequiredRemoved(pinned, live)", checkExtensionRequiredRemoved, []checkCase{
		{
			name:   "required extension becomes optional",
			pinned: modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
			want: []Finding{{
				Rule: RuleExtensionRequiredRemoved, Severity: Info, Path: "/capabilities/extensions/0/required",
				Before: true, After: false,
				Message:   `extension "https://ext.example.com/trace/v1" is no longer required`,
				Extension: traceURI,
			}},
		},
		{
			name:   "required extension removed is extension-removed",
			pinned: modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
			live:   modified(func(c *Card) { c.Capabilities.Extensions = nil }),
		},
	})
}

func TestCheckExtensionParams(t *testing.T) {
	runCheck(t, "checkExtensionParams(pinned, live)", checkExtensionParams, []checkCase{
		{
			name: "params changed",
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Params = `{"level":"full"}` }),
			want: []Finding{{
				Rule: RuleExtensionParamsChanged, Severity: Warning, Path: "/capabilities/extensions/0/params",
				Before: json.RawMessage(`{"level":"basic"}`), After: json.RawMessage(`{"level":"full"}`),
				Message:   `parameters of extension "https://ext.example.com/trace/v1" changed`,
				Extension: traceURI,
			}},
		},
		{
			name: "params dropped",
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Params = "" }),
			want: []Finding{{
				Rule: RuleExtensionParamsChanged, Severity: Warning, Path: "/capabilities/extensions/0/params",
				Before:    json.RawMessage(`{"level":"basic"}`),
				Message:   `parameters of extension "https://ext.example.com/trace/v1" changed`,
				Extension: traceURI,
			}},
		},
		{
			name: "only the description changed",
			live: modified(func(c *Card) { c.Capabilities.Extensions[0].Description = "Tracing" }),
		},
	})
}
