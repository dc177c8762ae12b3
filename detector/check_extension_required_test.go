package detector

import "testing"

func TestCheckExtensionRequiredAdded(t *testing.T) {
	runCheck(t, "checkExtensionRequiredAdded(pinned, live)", checkExtensionRequiredAdded, []checkCase{
		{
			name:   "optional extension becomes required",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Capabilities.Extensions[0].Required = true }),
			want: []Finding{{
				Rule: RuleExtensionRequiredAdded, Severity: Breaking, Path: "/capabilities/extensions/0/required",
				Before: false, After: true,
				Message:   `extension "https://ext.example.com/trace/v1" is now required: clients that do not support it will be refused`,
				Extension: traceURI,
			}},
		},
		{
			name:   "new required extension",
			pinned: testCard(),
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
			live:   testCard(),
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
