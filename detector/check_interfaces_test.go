package detector

import "testing"

func TestCheckInterfaces(t *testing.T) {
	jsonrpc := map[string]string{"url": "https://planner.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
	grpc := map[string]string{"url": "https://planner.example.com/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
	// moved is the finding for the preferred (JSONRPC) interface moving from
	// one URL to another.
	moved := func(from, to string) []Finding {
		return []Finding{{
			Rule: RuleInterfaceChanged, Severity: Breaking, Path: "/supportedInterfaces/0",
			Before:  map[string]string{"url": from, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			After:   map[string]string{"url": to, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			Message: `JSONRPC interface moved from "` + from + `" to "` + to + `"`,
		}}
	}
	runCheck(t, "checkInterfaces(pinned, live)", checkInterfaces, []checkCase{
		{
			name: "interface removed",
			live: modified(func(c *Card) { c.Interfaces = c.Interfaces[:1] }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Breaking, Path: "/supportedInterfaces/1", Before: grpc,
				Message: `interface GRPC "https://planner.example.com/grpc" is no longer offered`,
			}},
		},
		{
			name: "interface moved to another URL",
			live: modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.com/v2/a2a" }),
			want: moved("https://planner.example.com/a2a", "https://planner.example.com/v2/a2a"),
		},
		{
			name: "interface added",
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
			name: "preferred interface changed",
			live: modified(func(c *Card) { c.Interfaces[0], c.Interfaces[1] = c.Interfaces[1], c.Interfaces[0] }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Warning, Path: "/supportedInterfaces/0",
				Before: jsonrpc, After: grpc,
				Message: `preferred interface changed from JSONRPC "https://planner.example.com/a2a" to GRPC "https://planner.example.com/grpc"`,
			}},
		},
		{
			name: "tenant changed",
			live: modified(func(c *Card) { c.Interfaces[1].Tenant = "acme" }),
			want: []Finding{{
				Rule: RuleInterfaceChanged, Severity: Breaking, Path: "/supportedInterfaces/1/tenant",
				Before: "", After: "acme",
				Message: `tenant of interface GRPC "https://planner.example.com/grpc" changed from "" to "acme"`,
			}},
		},
		{
			name: "binding spelled in lower case",
			live: modified(func(c *Card) { c.Interfaces[0].ProtocolBinding = "jsonrpc" }),
		},
		{
			name: "same endpoint listed once per protocol version",
			live: modified(func(c *Card) {
				c.Interfaces = append(c.Interfaces[:1], Interface{URL: "https://planner.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}, c.Interfaces[1])
			}),
		},
		{
			name:   "host case, default port and empty path",
			pinned: modified(func(c *Card) { c.Interfaces[0].URL = "https://Agent.Example.com:443" }),
			live:   modified(func(c *Card) { c.Interfaces[0].URL = "https://agent.example.com/" }),
		},
		{
			name:   "scheme case and explicit :80 on http",
			pinned: modified(func(c *Card) { c.Interfaces[0].URL = "http://planner.example.com/a2a" }),
			live:   modified(func(c *Card) { c.Interfaces[0].URL = "HTTP://PLANNER.example.com:80/a2a" }),
		},
		{
			name: "explicit :443 on the preferred interface",
			live: modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.com:443/a2a" }),
		},
		{
			name: "path case is a move",
			live: modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.com/A2A" }),
			want: moved("https://planner.example.com/a2a", "https://planner.example.com/A2A"),
		},
		{
			name: "another port is a move",
			live: modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.com:8443/a2a" }),
			want: moved("https://planner.example.com/a2a", "https://planner.example.com:8443/a2a"),
		},
		{
			name:   ":443 on http is not a default port",
			pinned: modified(func(c *Card) { c.Interfaces[0].URL = "http://planner.example.com/a2a" }),
			live:   modified(func(c *Card) { c.Interfaces[0].URL = "http://planner.example.com:443/a2a" }),
			want:   moved("http://planner.example.com/a2a", "http://planner.example.com:443/a2a"),
		},
		{
			name: "protocol version only",
			live: modified(func(c *Card) { c.Interfaces[0].ProtocolVersion = "0.3" }),
		},
	})
}

func TestCheckProtocolVersion(t *testing.T) {
	runCheck(t, "checkProtocolVersion(pinned, live)", checkProtocolVersion, []checkCase{
		{
			name: "retained interface downgraded",
			live: modified(func(c *Card) { c.Interfaces[1].ProtocolVersion = "0.3.0" }),
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
			name: "endpoint adds a second protocol version",
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
			name: "every interface moved and downgraded",
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
			name: "zero patch spelled out",
			live: modified(func(c *Card) { c.Interfaces[0].ProtocolVersion = "1.0.0" }),
		},
		{
			name: "interface moved, version kept",
			live: modified(func(c *Card) { c.Interfaces[0].URL = "https://planner.example.net/a2a" }),
		},
	})
}
