package detector

import "testing"

func TestCheckInterfaces(t *testing.T) {
	jsonrpc := map[string]string{"url": "https://planner.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
	grpc := map[string]string{"url": "https://planner.example.com/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
	runCheck(t, "checkInterfaces(pinned, live)", checkInterfaces, []checkCase{
		{
			name:   "interface removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces = c.Interfaces[:1] }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Breaking, Path: "/supportedInterfaces/1", Before: grpc,
				Message: `interface GRPC "https://planner.example.com/grpc" is no longer offered`,
			}},
		},
		{
			name:   "interface moved to another URL",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.com/v2/a2a" }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Breaking, Path: "/supportedInterfaces/0",
				Before:  jsonrpc,
				After:   map[string]string{"url": "https://planner.example.com/v2/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
				Message: `JSONRPC interface moved from "https://planner.example.com/a2a" to "https://planner.example.com/v2/a2a"`,
			}},
		},
		{
			name:   "interface added",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Interfaces = append(c.Interfaces, Interface{URL: "https://planner.example.com/rest", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"})
			}),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Info, Path: "/supportedInterfaces/2",
				After:   map[string]string{"url": "https://planner.example.com/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
				Message: `interface HTTP+JSON "https://planner.example.com/rest" is now offered`,
			}},
		},
		{
			name:   "preferred interface changed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[0], c.Interfaces[1] = c.Interfaces[1], c.Interfaces[0] }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Warning, Path: "/supportedInterfaces/0",
				Before: jsonrpc, After: grpc,
				Message: `preferred interface changed from JSONRPC "https://planner.example.com/a2a" to GRPC "https://planner.example.com/grpc"`,
			}},
		},
		{
			name:   "tenant changed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[1].Tenant = "acme" }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Breaking, Path: "/supportedInterfaces/1/tenant",
				Before: "", After: "acme",
				Message: `tenant of interface GRPC "https://planner.example.com/grpc" changed from "" to "acme"`,
			}},
		},
		{
			name:   "binding spelled in lower case",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[0].ProtocolBinding = "jsonrpc" }),
		},
		{
			name:   "same endpoint listed once per protocol version",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Interfaces = append(c.Interfaces[:1], Interface{URL: "https://planner.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}, c.Interfaces[1])
			}),
		},
		{
			name:   "protocol version only",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Interfaces[0].ProtocolVersion = "0.3" }),
		},
	})
}
