package detector

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureCards holds the real cards every test reads: the repository's one
// copy, with their provenance and licence in MANIFEST.tsv.
const fixtureCards = "testdata/cards"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	return mustRead(t, filepath.Join(fixtureCards, name))
}

func mustParse(t testing.TB, raw []byte) *Card {
	t.Helper()
	c, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// TestParseFixtures pins, for every real card in testdata/cards, the
// decision: accepted with which shape, or rejected with which typed error.
func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file          string
		shape         string
		skills        int
		nonconformant bool // Card.Conformance is not empty
	}{
		{file: "001-spec-v0.1.0-georoute-planner.json", shape: "v0.1", skills: 2},
		{file: "002-spec-v0.2.6-georoute-planner.json", shape: "v0.2", skills: 2},
		{file: "003-spec-v0.3.0-georoute-planner-signed.json", shape: "v0.2", skills: 2}, // says protocolVersion 0.2.9
		{file: "004-spec-v1.0.1-georoute-planner-signed.json", shape: "hybrid", skills: 2},
		// 005 and 008 carry no generation marker at all (no protocolVersion, no
		// interfaces, no security): the shape cannot be told and is not asserted.
		{file: "005-spec-v1.0.1-signing-example-minimal.json", shape: "", skills: 0},
		{file: "006-docs-v0.3.0-extensions-magic-8-ball.json", shape: "v0.3", skills: 1},
		{file: "007-docs-v1.0.1-extensions-magic-8-ball.json", shape: "v0.3", skills: 1},
		{file: "008-a2a-readme-v0.1.0-parse-and-chat.json", shape: "", skills: 1},
		{file: "009-a2a-cli-testdata-full.json", shape: "hybrid", skills: 3},
		{file: "010-a2a-cli-testdata-minimal.json", shape: "hybrid", skills: 1},
		// Wrong types everywhere: read around, listed as nonconformant.
		{file: "011-a2a-cli-testdata-invalid-format.json", skills: -1, nonconformant: true},
		// Hardly an A2A card (capabilities is an array of function specs): a
		// JSON object all the same, pinned and compared.
		{file: "014-a2a-smart-crypto-reporting-analytics.json", skills: -1, nonconformant: true},
		{file: "012-a2a-aiar-identity-agent-card.json", shape: "v1.0", skills: -1},
		{file: "013-a2a-aiar-identity-agent-card-signed.json", shape: "v1.0", skills: -1},
		{file: "015-a2a-autogen-hyperwhales.json", shape: "v0.1", skills: 1},
		// Booleans as "True"/"False" strings: accepted, read as booleans.
		{file: "016-a2a-mcp-reimbursement-agent.json", shape: "v0.3", skills: 1},
		{file: "017-a2a-mcp-air-ticketing-agent-2025-05.json", shape: "v0.1", skills: 1},
		{file: "018-samples-a2a-mcp-air-ticketing-agent.json", shape: "", skills: 1},
		{file: "019-samples-oixa-protocol-marketplace.json", shape: "v0.1", skills: 5},
		{file: "020-samples-commerce-profile-paid-translation.json", shape: "hybrid", skills: -1},
		{file: "021-samples-adk-check-prime-agent.json", shape: "", skills: -1},
		{file: "022-samples-adk-facts-agent.json", shape: "", skills: -1},
		{file: "023-samples-adk-human-in-loop-reimbursement.json", shape: "", skills: 3},
		{file: "024-samples-adk-skills-currency-agent.json", shape: "v1.0", skills: -1},
		{file: "025-samples-adk-currency-agent.json", shape: "v0.3", skills: -1},
		{file: "026-samples-generator-research-assistant.json", shape: "hybrid", skills: -1},
		{file: "027-a2a-go-json-test-georoute-planner.json", shape: "v1.0", skills: 2},
		{file: "028-v0.1.0-js-movie-agent.json", shape: "v0.1", skills: -1},
		{file: "029-a2a-js-movie-agent-v1.json", shape: "v1.0", skills: -1},
		{file: "030-java-dice-agent-multi-transport.json", shape: "v0.3", skills: -1},
		{file: "031-java-magic-8-ball-oauth2.json", shape: "v0.3", skills: 1},
		{file: "032-python-helloworld-public.json", shape: "v1.0", skills: 1},
		{file: "033-python-helloworld-extended.json", shape: "v1.0", skills: 2},
		{file: "034-python-birthday-calendar-agent-oauth2.json", shape: "v0.3", skills: -1},
	}
	entries, err := os.ReadDir(fixtureCards)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !covered[e.Name()] {
			t.Errorf("fixture %s has no row in this table", e.Name())
		}
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := Parse(readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse(%s) error = %v, want a card", tt.file, err)
			}
			if tt.shape != "" && c.Shape != tt.shape {
				t.Errorf("Parse(%s).Shape = %q, want %q", tt.file, c.Shape, tt.shape)
			}
			if tt.skills >= 0 && len(c.Skills) != tt.skills {
				t.Errorf("Parse(%s) has %d skills, want %d", tt.file, len(c.Skills), tt.skills)
			}
			if got := len(c.Conformance) > 0; got != tt.nonconformant {
				t.Errorf("Parse(%s).Conformance = %v, want nonconformant=%v", tt.file, c.Conformance, tt.nonconformant)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", ``, ErrNotJSON},
		{"garbage", `{"name": }`, ErrNotJSON},
		{"trailing", `{"name":"a"} x`, ErrNotJSON},
		{"array", `["name"]`, ErrNotObject},
		{"string", `"card"`, ErrNotObject},
		{"duplicate key", `{"name":"a","name":"b"}`, ErrDuplicateKey},
		{"nested duplicate key", `{"name":"a","capabilities":{"streaming":true,"streaming":false}}`, ErrDuplicateKey},
		{"invalid utf-8", "{\"name\":\"a\xff\"}", ErrInvalidUTF8},
		{"lone surrogate", `{"name":"\ud800"}`, ErrInvalidUTF8},
		{"too deep", `{"name":"a","x":` + deep + `}`, ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse(%q) error = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	raw := []byte(`{"name":"` + strings.Repeat("a", 100) + `"}`)
	_, err := ParseLimits(raw, Limits{MaxBytes: 50})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ParseLimits(150 bytes, max 50) error = %v, want ErrTooLarge", err)
	}
}

// TestParseLimitsDefaults: a zero or negative limit is its default
// (DefaultLimits): a card just within both is read, one a byte longer or a
// level deeper is not.
func TestParseLimitsDefaults(t *testing.T) {
	card := func(n int) []byte { return []byte(`{"name":"` + strings.Repeat("a", n-len(`{"name":""}`)) + `"}`) }
	nested := func(depth int) []byte { // an object at depth 1, arrays below it
		return []byte(`{"x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
	}
	for _, lim := range []Limits{{}, {MaxBytes: -1, MaxDepth: -1}, DefaultLimits} {
		for _, c := range []struct {
			name string
			raw  []byte
			want error
		}{
			{"the longest", card(DefaultLimits.MaxBytes), nil},
			{"a byte longer", card(DefaultLimits.MaxBytes + 1), ErrTooLarge},
			{"the deepest", nested(DefaultLimits.MaxDepth), nil},
			{"a level deeper", nested(DefaultLimits.MaxDepth + 1), ErrTooDeep},
		} {
			if _, err := ParseLimits(c.raw, lim); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
				t.Errorf("ParseLimits(%s, %+v) error = %v, want %v", c.name, lim, err, c.want)
			}
		}
	}
}

func TestParseNormalises(t *testing.T) {
	t.Run("v0.3 interfaces keep order, preferred first", func(t *testing.T) {
		c := mustParse(t, readFixture(t, "031-java-magic-8-ball-oauth2.json"))
		got := []string{}
		for _, in := range c.Interfaces {
			got = append(got, in.ProtocolBinding+" "+in.URL+" "+in.ProtocolVersion)
		}
		want := []string{"JSONRPC http://localhost:11000 0.3.0", "HTTP+JSON http://localhost:11000 0.3.0", "GRPC localhost:11000 0.3.0"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("Interfaces = %q, want %q", got, want)
		}
		s := c.SecuritySchemes["oauth2"]
		if s.Type != "oauth2" || s.Flows["clientCredentials"].TokenURL == "" || len(s.Flows["clientCredentials"].Scopes) != 2 {
			t.Fatalf("oauth2 scheme = %+v", s)
		}
		if len(c.SecurityRequirements) != 1 || len(c.SecurityRequirements[0]["oauth2"]) != 1 {
			t.Fatalf("SecurityRequirements = %v", c.SecurityRequirements)
		}
	})
	t.Run("v1.0 wrapped schemes and requirement forms", func(t *testing.T) {
		c := mustParse(t, readFixture(t, "027-a2a-go-json-test-georoute-planner.json"))
		if c.SecuritySchemes["google"].Type != "openIdConnect" {
			t.Fatalf("google scheme = %+v", c.SecuritySchemes["google"])
		}
		if got := c.SecurityRequirements[0]["google"]; len(got) != 3 {
			t.Fatalf("requirements = %v", c.SecurityRequirements)
		}
		s, ok := c.Skill("route-optimizer-traffic")
		if !ok || len(s.SecurityRequirements) != 1 {
			t.Fatalf("skill requirements = %+v", s)
		}
		if !c.Capabilities.ExtendedAgentCard || !c.HasSignatures {
			t.Fatalf("capabilities = %+v signatures=%v", c.Capabilities, c.HasSignatures)
		}
		req, err := Parse([]byte(`{"name":"a","securityRequirements":[{"schemes":{"b":{"list":["s1","s2"]}}}]}`))
		if err != nil || len(req.SecurityRequirements[0]["b"]) != 2 {
			t.Fatalf("proto-form requirements = %v, %v", req, err)
		}
	})
	t.Run("string booleans", func(t *testing.T) {
		c := mustParse(t, readFixture(t, "016-a2a-mcp-reimbursement-agent.json"))
		if !c.Capabilities.Streaming || c.Capabilities.PushNotifications {
			t.Fatalf("capabilities = %+v, want streaming only", c.Capabilities)
		}
	})
	t.Run("skills sorted by id, index kept", func(t *testing.T) {
		c := mustParse(t, []byte(`{"name":"a","skills":[{"id":"b"},{"id":"a"}]}`))
		if c.Skills[0].ID != "a" || c.Skills[0].Index != 1 || c.Skills[1].Index != 0 {
			t.Fatalf("skills = %+v", c.Skills)
		}
		if _, ok := c.Skill("b"); !ok {
			t.Fatalf("Skill(b) not found")
		}
	})
	t.Run("skill modes fall back to defaults", func(t *testing.T) {
		c := mustParse(t, []byte(`{"name":"a","defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"x","outputModes":["image/png"]}]}`))
		s, _ := c.Skill("x")
		if got := c.InputModes(s); len(got) != 1 || got[0] != "text/plain" {
			t.Fatalf("InputModes = %v", got)
		}
		if got := c.OutputModes(s); len(got) != 1 || got[0] != "image/png" {
			t.Fatalf("OutputModes = %v", got)
		}
	})
	t.Run("v0.1 authentication maps to schemes", func(t *testing.T) {
		c := mustParse(t, readFixture(t, "001-spec-v0.1.0-georoute-planner.json"))
		if len(c.SecuritySchemes) == 0 {
			t.Fatalf("v0.1 authentication produced no schemes")
		}
		c = mustParse(t, readFixture(t, "019-samples-oixa-protocol-marketplace.json"))
		if len(c.SecuritySchemes) != 0 {
			t.Fatalf(`authentication "none" produced schemes %v`, c.SecuritySchemes)
		}
	})
	t.Run("v1.0 and v0.3 twins normalise to the same structure", func(t *testing.T) {
		a := mustParse(t, readFixture(t, "006-docs-v0.3.0-extensions-magic-8-ball.json"))
		b := mustParse(t, readFixture(t, "007-docs-v1.0.1-extensions-magic-8-ball.json"))
		if StructuralDigest(a) != StructuralDigest(b) || Fingerprint(a) != Fingerprint(b) {
			t.Fatalf("006/007 structural digests differ")
		}
	})
}

// FuzzParse feeds arbitrary bytes to Parse. It must never panic; a rejection
// must carry one of the documented typed errors; an accepted card must be
// internally consistent (skills sorted and indexed, digests computable) and
// parse to the same fingerprint twice.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{fixtureCards, filepath.Join("testdata", "forms")} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			if raw, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				f.Add(raw)
			}
		}
	}
	f.Add([]byte(`{"name":"a","skills":[{"id":"b"},{"id":"a"}],"securityRequirements":[{"schemes":{"x":{"list":["s"]}}}]}`))
	f.Add([]byte(`{"name":"a","authentication":{"schemes":["Bearer","public"]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse(raw)
		if err != nil {
			typed := []error{ErrNotJSON, ErrNotObject, ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge, ErrTooDeep}
			for _, want := range typed {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("Parse error %v (%T) is none of the typed errors", err, err)
		}
		for i := 1; i < len(c.Skills); i++ {
			if c.Skills[i-1].ID >= c.Skills[i].ID {
				t.Fatalf("skills not sorted by unique id: %q, %q", c.Skills[i-1].ID, c.Skills[i].ID)
			}
		}
		for _, s := range c.Skills {
			if got, ok := c.Skill(s.ID); !ok || got.ID != s.ID {
				t.Fatalf("Skill(%q) not found", s.ID)
			}
		}
		if c.Name == "" && c.URL() == "" && !slices.ContainsFunc(c.Conformance, func(n Nonconformance) bool { return n.Path == "" }) {
			t.Fatalf("a card with no identity is not noted as nonconformant: %v", c.Conformance)
		}
		if _, err := Digest(raw); err != nil {
			t.Fatalf("Digest of an accepted card: %v", err)
		}
		again, err := Parse(raw)
		if err != nil || Fingerprint(again) != Fingerprint(c) || StructuralDigest(again) != StructuralDigest(c) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
		if len(Diff(c, again)) != 0 {
			t.Fatalf("Diff of a card with itself: %v", Diff(c, again))
		}
	})
}
