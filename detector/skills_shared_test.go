package detector

import (
	"slices"
	"testing"
)

// TestCompareSkills is the consistency table: a skill id offered by several
// agents is consistent only when modes, streaming, push and the kinds of
// security that apply to it agree; names of schemes do not matter.
func TestCompareSkills(t *testing.T) {
	card := func(js string) *Card {
		c, err := Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const base = `{"name":"A","url":"https://a.example/a2a","version":"1","protocolVersion":"0.3",` +
		`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],` +
		`"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],` +
		`"skills":[{"id":"summarize","name":"S","description":"d","tags":[]}]}`
	for _, tc := range []struct {
		name   string
		other  string
		fields []string // differing fields; nil: consistent
	}{
		{"same card", base, nil},
		{"scheme renamed", `{"name":"B","url":"https://b.example/a2a","version":"2","protocolVersion":"0.3",
			"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
			"securitySchemes":{"token":{"type":"http","scheme":"Bearer"}},"security":[{"token":[]}],
			"skills":[{"id":"summarize","name":"Summary","description":"other words","tags":["x"]}]}`, nil},
		{"skill modes override defaults", `{"name":"B","url":"https://b.example/a2a","version":"1","protocolVersion":"0.3",
			"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
			"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],
			"skills":[{"id":"summarize","name":"S","description":"d","tags":[],"outputModes":["application/json"]}]}`,
			[]string{"outputModes"}},
		{"no streaming, no auth", `{"name":"B","url":"https://b.example/a2a","version":"1","protocolVersion":"0.3",
			"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
			"skills":[{"id":"summarize","name":"S","description":"d","tags":[]}]}`,
			[]string{"streaming", "security"}},
		{"push and input modes", `{"name":"B","url":"https://b.example/a2a","version":"1","protocolVersion":"0.3",
			"capabilities":{"streaming":true,"pushNotifications":true},"defaultInputModes":["text/plain","application/pdf"],"defaultOutputModes":["text/plain"],
			"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],
			"skills":[{"id":"summarize","name":"S","description":"d","tags":[]}]}`,
			[]string{"inputModes", "pushNotifications"}},
		{"oauth instead of bearer", `{"name":"B","url":"https://b.example/a2a","version":"1","protocolVersion":"0.3",
			"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
			"securitySchemes":{"o":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://b.example/t","scopes":{"run":"r"}}}}},
			"security":[{"o":["run"]}],
			"skills":[{"id":"summarize","name":"S","description":"d","tags":[]}]}`,
			[]string{"security"}},
		{"another skill id", `{"name":"B","url":"https://b.example/a2a","version":"1","protocolVersion":"0.3",
			"capabilities":{},"skills":[{"id":"translate","name":"T","description":"d","tags":[]}]}`, []string{"not shared"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareSkills(map[string]*Card{"https://a.example": card(base), "https://b.example": card(tc.other), "https://c.example": nil})
			if slices.Equal(tc.fields, []string{"not shared"}) {
				if len(got) != 0 {
					t.Fatalf("CompareSkills = %+v, want nothing shared", got)
				}
				return
			}
			if len(got) != 1 || got[0].ID != "summarize" || !slices.Equal(got[0].Agents, []string{"https://a.example", "https://b.example"}) {
				t.Fatalf("CompareSkills = %+v, want summarize on both agents", got)
			}
			var fields []string
			for _, d := range got[0].Differences {
				fields = append(fields, d.Field)
				if len(d.Values) != 2 {
					t.Errorf("difference %s has values %v, want one per agent", d.Field, d.Values)
				}
			}
			if !slices.Equal(fields, tc.fields) || got[0].Consistent != (len(tc.fields) == 0) {
				t.Errorf("CompareSkills differences = %v (consistent %v), want %v", fields, got[0].Consistent, tc.fields)
			}
		})
	}
}
