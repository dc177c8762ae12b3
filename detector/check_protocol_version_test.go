package detector

import "testing"

func TestCheckProtocolVersion(t *testing.T) {
	runCheck(t, "checkProtocolVersion(pinned, live)", checkProtocolVersion, []checkCase{
		{
			name:   "retained interface downgraded",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[1].ProtocolVersion = "0.3.0" }),
			want: []Finding{{
				Rule: RuleProtocolVersionChanged, Severity: Breaking, Path: "/supportedInterfaces/1/protocolVersion",
				Before: []string{"1.0"}, After: []string{"0.3.0"},
				Message: `protocol version of interface GRPC "https://planner.example.com/grpc" changed from "1.0" to "0.3.0"`,
			}},
		},
		{
			name:   "patch level only",
			pinned: modified(func(c *Card) { c.Interfaces = c.Interfaces[:1]; c.Interfaces[0].ProtocolVersion = "0.2.5" }),
			live:   modified(func(c *Card) { c.Interfaces = c.Interfaces[:1]; c.Interfaces[0].ProtocolVersion = "0.2.6" }),
			want: []Finding{{
				Rule: RuleProtocolVersionChanged, Severity: Info, Path: "/supportedInterfaces/0/protocolVersion",
				Before: []string{"0.2.5"}, After: []string{"0.2.6"},
				Message: `protocol version of interface JSONRPC "https://planner.example.com/a2a" changed from "0.2.5" to "0.2.6"`,
			}},
		},
		{
			name:   "endpoint adds a second protocol version",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Interfaces = append(c.Interfaces, Interface{URL: "https://planner.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"})
			}),
			want: []Finding{{
				Rule: RuleProtocolVersionChanged, Severity: Info, Path: "/supportedInterfaces/0/protocolVersion",
				Before: []string{"1.0"}, After: []string{"1.0", "0.3"},
				Message: `protocol version of interface JSONRPC "https://planner.example.com/a2a" changed from "1.0" to "1.0", "0.3"`,
			}},
		},
		{
			name:   "v0.1 card without a version gains one",
			pinned: modified(func(c *Card) { c.Interfaces = c.Interfaces[:1]; c.Interfaces[0].ProtocolVersion = "" }),
			live:   modified(func(c *Card) { c.Interfaces = c.Interfaces[:1] }),
			want: []Finding{{
				Rule: RuleProtocolVersionChanged, Severity: Breaking, Path: "/supportedInterfaces/0/protocolVersion",
				Before: []string{""}, After: []string{"1.0"},
				Message: `protocol version of interface JSONRPC "https://planner.example.com/a2a" changed from unspecified to "1.0"`,
			}},
		},
		{
			name:   "every interface moved and downgraded",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Interfaces = []Interface{{URL: "https://planner.example.net/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3.0"}}
			}),
			want: []Finding{{
				Rule: RuleProtocolVersionChanged, Severity: Breaking, Path: "/supportedInterfaces",
				Before: []string{"1.0"}, After: []string{"0.3.0"},
				Message: `protocol versions of the card changed from "1.0" to "0.3.0"`,
			}},
		},
		{
			name:   "zero patch spelled out",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[0].ProtocolVersion = "1.0.0" }),
		},
		{
			name:   "interface moved, version kept",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.net/a2a" }),
		},
	})
}
