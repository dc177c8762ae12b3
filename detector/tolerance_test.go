package detector

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
)

// TestParseReadsAround: parts that follow no known schema are noted with a
// pointer into the served card and read around; the rest is still compared.
func TestParseReadsAround(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		paths []string // Conformance paths, in order
		check func(t *testing.T, c *Card)
	}{
		{
			name:  "examples as objects",
			in:    `{"name":"a","skills":[{"id":"s","examples":[{"input":"hi"},"plain"],"inputModes":["text/plain"]}]}`,
			paths: []string{"/skills/0/examples/0"},
			check: func(t *testing.T, c *Card) {
				s, ok := c.Skill("s")
				if !ok || !slices.Equal(s.Examples, []string{"plain"}) || !slices.Equal(s.InputModes, []string{"text/plain"}) {
					t.Fatalf("skill = %+v", s)
				}
			},
		},
		{
			name:  "number where a string belongs",
			in:    `{"name":"a","version":2,"description":{"en":"x"}}`,
			paths: []string{"/description", "/version"},
		},
		{
			name:  "no identity",
			in:    `{"description":"nameless"}`,
			paths: []string{""},
		},
		{
			name:  "skill without id and duplicate id",
			in:    `{"name":"a","skills":[{"name":"x"},{"id":"b"},{"id":"b","name":"second"}]}`,
			paths: []string{"/skills/0", "/skills/2/id"},
			check: func(t *testing.T, c *Card) {
				if len(c.Skills) != 1 || c.Skills[0].Index != 1 {
					t.Fatalf("skills = %+v, want the first b only", c.Skills)
				}
			},
		},
		{
			name:  "capabilities an array",
			in:    `{"name":"a","capabilities":[{"name":"fn"}]}`,
			paths: []string{"/capabilities"},
		},
		{
			name:  "modes as one string",
			in:    `{"name":"a","defaultInputModes":"text/plain"}`,
			paths: []string{"/defaultInputModes"},
			check: func(t *testing.T, c *Card) {
				if !slices.Equal(c.DefaultInputModes, []string{"text/plain"}) {
					t.Fatalf("DefaultInputModes = %v", c.DefaultInputModes)
				}
			},
		},
		{
			name:  "boolean garbage",
			in:    `{"name":"a","capabilities":{"streaming":"yes","pushNotifications":true}}`,
			paths: []string{"/capabilities/streaming"},
			check: func(t *testing.T, c *Card) {
				if c.Capabilities.Streaming || !c.Capabilities.PushNotifications {
					t.Fatalf("capabilities = %+v", c.Capabilities)
				}
			},
		},
		{
			name:  "scheme without type",
			in:    `{"name":"a","securitySchemes":{"x":{},"y":{"type":"http","scheme":"Bearer"}}}`,
			paths: []string{"/securitySchemes/x"},
			check: func(t *testing.T, c *Card) {
				if c.SecuritySchemes["y"].Scheme != "bearer" {
					t.Fatalf("schemes = %+v", c.SecuritySchemes)
				}
			},
		},
		{
			name:  "unknown protocol versions are carried",
			in:    `{"name":"a","protocolVersion":"2.0","supportedInterfaces":[{"url":"https://a","protocolBinding":"JSONRPC","protocolVersion":"7.1"},{"url":"https://a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			paths: nil,
			check: func(t *testing.T, c *Card) {
				if got := c.ProtocolVersions(); !slices.Equal(got, []string{"7.1", "1.0"}) {
					t.Fatalf("ProtocolVersions = %v", got)
				}
			},
		},
		{
			name:  "version not a string",
			in:    `{"name":"a","protocolVersion":1.0}`,
			paths: []string{"/protocolVersion"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse = %v, want a card", err)
			}
			var got []string
			for _, n := range c.Conformance {
				got = append(got, n.Path)
				if n.Message == "" {
					t.Errorf("nonconformance at %q has no message", n.Path)
				}
				root, _ := jcs.Parse([]byte(tt.in), jcs.Limits{})
				if !resolves(&root, n.Path) {
					t.Errorf("nonconformance path %q does not resolve in the card", n.Path)
				}
			}
			slices.Sort(got)
			want := slices.Clone(tt.paths)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("Conformance paths = %q, want %q (%v)", got, want, c.Conformance)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

// TestNonconformantFinding: a card that starts to be sloppy in a place is a
// warning; one that always was is no finding.
func TestNonconformantFinding(t *testing.T) {
	clean := mustParse(t, []byte(`{"name":"a","skills":[{"id":"s","examples":["x"]}]}`))
	sloppy := mustParse(t, []byte(`{"name":"a","skills":[{"id":"s","examples":[{"x":1}]}]}`))
	fs := Diff(clean, sloppy)
	i := slices.IndexFunc(fs, func(f Finding) bool { return f.Rule == RuleCardNonconformant })
	if i < 0 || fs[i].Severity != Warning || fs[i].Path != "/skills/0/examples/0" {
		t.Fatalf("Diff(clean, sloppy) = %+v, want a card-nonconformant warning at /skills/0/examples/0", fs)
	}
	if fs := Diff(sloppy, sloppy); len(fs) != 0 {
		t.Fatalf("Diff(sloppy, sloppy) = %+v, want none", fs)
	}
}

// TestProto3Defaults: in v1.0 cards an empty list means unset.
func TestProto3Defaults(t *testing.T) {
	base := `{"name":"a","supportedInterfaces":[{"url":"https://a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
		`"defaultInputModes":["text/plain"],"defaultOutputModes":["application/json"],` +
		`"securityRequirements":[{"schemes":{"k":{"list":[]}}}],"securitySchemes":{"k":{"apiKeySecurityScheme":{"name":"X-Key","location":"header"}}},` +
		`"skills":[{"id":"s","name":"S"%s}]}`
	plain := mustParse(t, []byte(fmt.Sprintf(base, "")))
	explicit := mustParse(t, []byte(fmt.Sprintf(base, `,"inputModes":[],"outputModes":[],"tags":[],"examples":[],"securityRequirements":[],"description":""`)))
	if fs := Diff(plain, explicit); len(fs) != 0 {
		t.Fatalf("Diff(absent, explicit defaults) = %+v, want none", fs)
	}
	if fs := Diff(explicit, plain); len(fs) != 0 {
		t.Fatalf("Diff(explicit defaults, absent) = %+v, want none", fs)
	}
	s, _ := explicit.Skill("s")
	if got := explicit.OutputModes(s); !slices.Equal(got, []string{"application/json"}) {
		t.Fatalf("OutputModes of a skill with outputModes [] = %v, want the card defaults", got)
	}
	if s.SecurityRequirements != nil {
		t.Fatalf("skill securityRequirements [] = %v, want unset (inherits the card's)", s.SecurityRequirements)
	}
}

// TestCardForms: the forms an SDK serves of one card (by A2A-Version) are
// one card: no findings between them, in either direction.
func TestCardForms(t *testing.T) {
	v1 := mustParse(t, readForm(t, "jssdk-1.3.0-v1.0.json"))
	v03 := mustParse(t, readForm(t, "jssdk-1.3.0-v0.3.json"))
	if len(v1.Conformance) != 0 || len(v03.Conformance) != 0 {
		t.Fatalf("conformance: v1.0 form %v, v0.3 form %v, want none", v1.Conformance, v03.Conformance)
	}
	if v1.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["invoices:write"] == "" {
		t.Fatalf("ts-proto oauth scheme read as %+v", v1.SecuritySchemes["oauth"])
	}
	if v1.SecuritySchemes["bearer"].Type != "http" || v1.SecuritySchemes["bearer"].Scheme != "bearer" {
		t.Fatalf("ts-proto bearer scheme read as %+v", v1.SecuritySchemes["bearer"])
	}
	if fs := Diff(v1, v03); len(fs) != 0 {
		t.Errorf("Diff(v1.0 form, v0.3 form) = %+v, want none", fs)
	}
	if fs := Diff(v03, v1); len(fs) != 0 {
		t.Errorf("Diff(v0.3 form, v1.0 form) = %+v, want none", fs)
	}
	if Fingerprint(v1) != Fingerprint(v03) {
		t.Errorf("fingerprints differ between the forms")
	}
}

func readForm(t testing.TB, name string) []byte {
	t.Helper()
	return mustRead(t, filepath.Join("testdata", "forms", name))
}

// mutation edits a card decoded as generic JSON; it reports false when it
// does not apply to the card.
type mutation struct {
	name string
	edit func(card map[string]any) bool
}

// cardMutations are the drift a vendor makes, written against whatever form
// the card is in (v0.3 keys, v1.0 keys, ts-proto oneofs).
var cardMutations = []mutation{
	{"remove first skill", func(c map[string]any) bool {
		sk, _ := c["skills"].([]any)
		if len(sk) == 0 {
			return false
		}
		c["skills"] = sk[1:]
		return true
	}},
	{"narrow first skill's input modes", func(c map[string]any) bool {
		s := firstSkill(c)
		m, _ := s["inputModes"].([]any)
		if len(m) < 2 {
			return false
		}
		s["inputModes"] = m[:1]
		return true
	}},
	{"replace first skill's output modes", func(c map[string]any) bool {
		s := firstSkill(c)
		if s == nil {
			return false
		}
		s["outputModes"] = []any{"application/x-new"}
		return true
	}},
	{"replace default output modes", func(c map[string]any) bool {
		c["defaultOutputModes"] = []any{"application/x-other"}
		return true
	}},
	{"streaming off", func(c map[string]any) bool {
		caps, ok := streamingCapabilities(c)
		if ok {
			caps["streaming"] = false
		}
		return ok
	}},
	{"streaming key dropped", func(c map[string]any) bool {
		caps, ok := streamingCapabilities(c)
		if ok {
			delete(caps, "streaming")
		}
		return ok
	}},
	{"remove a security scheme", func(c map[string]any) bool {
		return deleteOne(c["securitySchemes"])
	}},
	{"remove a scope from every flow", func(c map[string]any) bool {
		return walk(c["securitySchemes"], func(m map[string]any) bool { return deleteOne(m["scopes"]) })
	}},
	{"change a scheme's bearer format", func(c map[string]any) bool {
		return walk(c["securitySchemes"], func(m map[string]any) bool { return setString(m, "scheme", "Basic") })
	}},
	{"drop card-level requirements", func(c map[string]any) bool {
		for _, k := range []string{"security", "securityRequirements"} {
			if l, ok := c[k].([]any); ok && len(l) > 0 {
				c[k] = []any{}
				return true
			}
		}
		return false
	}},
	{"tighten skill requirements", func(c map[string]any) bool {
		s := firstSkill(c)
		if s == nil {
			return false
		}
		s["security"] = []any{map[string]any{"someNewScheme": []any{"x"}}}
		return true
	}},
	{"move every interface", func(c map[string]any) bool {
		done := setString(c, "url", "https://moved.example.com/a2a")
		for _, k := range []string{"supportedInterfaces", "additionalInterfaces"} {
			moved := eachObject(c[k], func(i int, m map[string]any) {
				m["url"] = fmt.Sprintf("https://moved.example.com/%s/%d", k, i)
			})
			done = moved || done
		}
		return done
	}},
	{"drop the extended card", func(c map[string]any) bool {
		for _, k := range []string{"supportsAuthenticatedExtendedCard", "supportsExtendedAgentCard"} {
			if c[k] == true {
				c[k] = false
				return true
			}
		}
		caps, _ := c["capabilities"].(map[string]any)
		if caps != nil && caps["extendedAgentCard"] == true {
			caps["extendedAgentCard"] = false
			return true
		}
		return false
	}},
	{"remove extensions, require a new one", func(c map[string]any) bool {
		caps, _ := c["capabilities"].(map[string]any)
		if caps == nil {
			return false
		}
		caps["extensions"] = []any{map[string]any{"uri": "https://example.com/ext/new", "required": true}}
		return true
	}},
	{"bump version and rename", func(c map[string]any) bool {
		c["version"] = "99.0.0"
		c["name"] = "renamed"
		return true
	}},
	{"change protocol versions", func(c map[string]any) bool {
		top := setString(c, "protocolVersion", "0.2.0")
		ifaces := eachObject(c["supportedInterfaces"], func(_ int, m map[string]any) { m["protocolVersion"] = "0.2" })
		return top || ifaces
	}},
	{"examples become objects", func(c map[string]any) bool {
		s := firstSkill(c)
		if s == nil {
			return false
		}
		s["examples"] = []any{map[string]any{"input": "x"}}
		return true
	}},
}

func firstSkill(c map[string]any) map[string]any {
	sk, _ := c["skills"].([]any)
	if len(sk) == 0 {
		return nil
	}
	s, _ := sk[0].(map[string]any)
	return s
}

// streamingCapabilities returns the card's capabilities object when it
// declares streaming.
func streamingCapabilities(c map[string]any) (map[string]any, bool) {
	caps, _ := c["capabilities"].(map[string]any)
	return caps, caps != nil && caps["streaming"] == true
}

// setString sets m's member key to s when it is a string, and reports
// whether it was.
func setString(m map[string]any, key, s string) bool {
	_, ok := m[key].(string)
	if ok {
		m[key] = s
	}
	return ok
}

// deleteOne deletes a member of the object v and reports whether it had one.
func deleteOne(v any) bool {
	m, _ := v.(map[string]any)
	for k := range m {
		delete(m, k)
		return true
	}
	return false
}

// walk calls fn for every object under v and reports whether fn edited any
// (returned true).
func walk(v any, fn func(map[string]any) bool) bool {
	edited := false
	switch x := v.(type) {
	case map[string]any:
		edited = fn(x)
		for _, e := range x {
			edited = walk(e, fn) || edited
		}
	case []any:
		for _, e := range x {
			edited = walk(e, fn) || edited
		}
	}
	return edited
}

// eachObject calls fn for every object in the list l, with its index, and
// reports whether there was one.
func eachObject(l any, fn func(i int, m map[string]any)) bool {
	list, _ := l.([]any)
	found := false
	for i, e := range list {
		if m, ok := e.(map[string]any); ok {
			fn(i, m)
			found = true
		}
	}
	return found
}

// fixtureBodies returns every fixture card and SDK-served form, by name.
func fixtureBodies(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, dir := range []string{fixtureCards, filepath.Join("testdata", "forms")} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			out[e.Name()] = mustRead(t, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func decodeCard(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encodeCard(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFindingPathsResolve: every path of every finding, over every fixture
// card and every mutation that applies to it, is a JSON pointer that resolves
// in the served card it names: the live card, or the pinned one for
// something removed.
func TestFindingPathsResolve(t *testing.T) {
	checked := 0
	for name, raw := range fixtureBodies(t) {
		pinned := mustParse(t, raw)
		pinnedTree, _ := jcs.Parse(raw, jcs.Limits{})
		for _, mu := range cardMutations {
			m := decodeCard(t, raw)
			if !mu.edit(m) {
				continue
			}
			liveRaw := encodeCard(t, m)
			live := mustParse(t, liveRaw)
			liveTree, _ := jcs.Parse(liveRaw, jcs.Limits{})
			for _, f := range Diff(pinned, live) {
				checked++
				in, tree := "live", &liveTree
				if f.After == nil && f.Before != nil {
					in, tree = "pinned", &pinnedTree
				}
				if !resolves(tree, f.Path) {
					// Something absent rather than false or empty is
					// addressed in the other card.
					other := &pinnedTree
					if in == "pinned" {
						other = &liveTree
					}
					if !resolves(other, f.Path) {
						t.Errorf("%s / %s: %s path %q resolves in neither card", name, mu.name, f.Rule, f.Path)
					}
				}
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d findings checked; the mutations do not exercise the rules", checked)
	}
}

// wildDeviations are the ways real cards deviate from the schema without
// changing what they offer: none may make a card unreadable or give a
// breaking finding against the original.
var wildDeviations = []mutation{
	{"examples as objects", func(c map[string]any) bool {
		return eachObject(c["skills"], func(_ int, s map[string]any) {
			s["examples"] = []any{map[string]any{"input": "hello", "output": "hi"}}
		})
	}},
	{"tags as one string", func(c map[string]any) bool {
		s := firstSkill(c)
		if s == nil {
			return false
		}
		s["tags"] = "one, two"
		return true
	}},
	{"description an object", func(c map[string]any) bool {
		c["description"] = map[string]any{"en": "text"}
		return true
	}},
	{"version a number", func(c map[string]any) bool {
		c["version"] = 3
		return true
	}},
	{"provider a string", func(c map[string]any) bool {
		c["provider"] = "Example Corp"
		return true
	}},
	{"vendor fields", func(c map[string]any) bool {
		c["x-vendor"] = map[string]any{"tier": "gold"}
		c["metadata"] = []any{1, 2, 3}
		if s := firstSkill(c); s != nil {
			s["x-cost"] = 0.02
		}
		return true
	}},
	{"explicit proto defaults", func(c map[string]any) bool {
		c["iconUrl"] = ""
		c["signatures"] = []any{}
		if caps, ok := c["capabilities"].(map[string]any); ok {
			if _, ok := caps["extensions"]; !ok {
				caps["extensions"] = []any{}
			}
			if _, ok := caps["pushNotifications"]; !ok {
				caps["pushNotifications"] = false
			}
		}
		if s := firstSkill(c); s != nil {
			if _, ok := s["examples"]; !ok {
				s["examples"] = []any{}
			}
		}
		return true
	}},
	{"an interface at an unknown version", func(c map[string]any) bool {
		l, ok := c["supportedInterfaces"].([]any)
		if !ok {
			return false
		}
		c["supportedInterfaces"] = append(l, map[string]any{"url": "https://future.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "9.0"})
		return true
	}},
	{"scheme description a number", func(c map[string]any) bool {
		return walk(c["securitySchemes"], func(m map[string]any) bool {
			_, ok := m["description"]
			if ok {
				m["description"] = 42
			}
			return ok
		})
	}},
}

// TestWildCorpus: every fixture card, deviated in the ways real cards are,
// is still pinned (parsed) and gives no breaking finding against its
// original. A deviation that adds an interface at an unknown version may be
// an addition (info), never breaking.
func TestWildCorpus(t *testing.T) {
	n := 0
	for name, raw := range fixtureBodies(t) {
		orig := mustParse(t, raw)
		for _, d := range wildDeviations {
			m := decodeCard(t, raw)
			if !d.edit(m) {
				continue
			}
			n++
			wild, err := Parse(encodeCard(t, m))
			if err != nil {
				t.Errorf("%s / %s: Parse = %v, want a card", name, d.name, err)
				continue
			}
			for _, f := range Diff(orig, wild) {
				if f.Severity == Breaking {
					t.Errorf("%s / %s: breaking finding %s at %s: %s", name, d.name, f.Rule, f.Path, f.Message)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d deviated cards; want the corpus to cover every fixture", n)
	}
}
