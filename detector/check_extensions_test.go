package detector

import "testing"

const traceURI = "https://ext.example.com/trace/v1"

func TestCheckExtensionRemoved(t *testing.T) {
	runCheck(t, "checkExtensionRemoved(pinned, live)", checkExtensionRemoved, []checkCase{
		{
			name:   "optional extension removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Extensions = nil }),
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
			name:   "extension moved in the list",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append([]Extension{{URI: "urn:x"}}, c.Capabilities.Extensions...)
			}),
		},
	})
}

func TestCheckExtensionAdded(t *testing.T) {
	runCheck(t, "checkExtensionAdded(pinned, live)", checkExtensionAdded, []checkCase{
		{
			name:   "optional extension added",
			pinned: testCard(),
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
			name:   "required extension added is extension-required-added",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x", Required: true})
			}),
		},
	})
}
