package detector

import (
	"slices"
	"testing"
)

// TestUnsatisfiedNewRequirements: the requirements a client can state since
// contract v1.1 (scopes, extensions, the extended card) are checked like the
// others.
func TestUnsatisfiedNewRequirements(t *testing.T) {
	card := mustParse(t, []byte(`{"name":"a","capabilities":{"extendedAgentCard":false,
		"extensions":[{"uri":"https://x.example/ext/req","required":true},{"uri":"https://x.example/ext/opt"}]},
		"securitySchemes":{"oauth":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"tokenUrl":"https://t","scopes":{"read":"r"}}}}}},
		"skills":[{"id":"s","name":"S"}]}`))
	tests := []struct {
		name string
		req  Requirements
		want []UnmetKind
	}{
		{"nothing stated", Requirements{SkillID: "s"}, nil},
		{"extended card", Requirements{SkillID: "s", ExtendedCard: true}, []UnmetKind{UnmetExtendedCard}},
		{"activated extension declared, required one activated", Requirements{SkillID: "s", Extensions: []string{"https://x.example/ext/req", "https://x.example/ext/opt"}}, nil},
		{"required extension not activated", Requirements{SkillID: "s", Extensions: []string{"https://x.example/ext/opt"}}, []UnmetKind{UnmetExtensionRequired}},
		{"unknown extension", Requirements{SkillID: "s", Extensions: []string{"https://x.example/ext/req", "https://x.example/ext/gone"}}, []UnmetKind{UnmetExtension}},
		{"offered scope", Requirements{SkillID: "s", Scopes: map[string][]string{"oauth": {"read"}}}, nil},
		{"scope not offered", Requirements{SkillID: "s", Scopes: map[string][]string{"oauth": {"read", "write"}}}, []UnmetKind{UnmetScope}},
	}
	for _, tt := range tests {
		var got []UnmetKind
		for _, u := range Unsatisfied(card, tt.req) {
			got = append(got, u.Kind)
			if u.Message == "" || u.Value == "" {
				t.Errorf("%s: unmet %+v lacks a value or message", tt.name, u)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Unsatisfied = %v, want %v", tt.name, got, tt.want)
		}
	}
}
