package detector

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// testCard returns a fresh, realistic v1.0 card built as a literal, so that
// each check can be tested on exactly one change: tests call modified.
func testCard() *Card {
	c := &Card{
		Name:             "Route Planner",
		Description:      "Plans routes and draws maps.",
		Version:          "1.2.0",
		DocumentationURL: "https://docs.example.com/planner",
		IconURL:          "https://planner.example.com/icon.png",
		Provider:         Provider{Organization: "Example Geo", URL: "https://example.com"},
		Shape:            "v1.0",
		Interfaces: []Interface{
			{URL: "https://planner.example.com/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: "https://planner.example.com/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
		},
		Capabilities: Capabilities{
			Streaming:         true,
			PushNotifications: true,
			ExtendedAgentCard: true,
			Extensions: []Extension{
				{URI: "https://ext.example.com/trace/v1", Description: "Request tracing", Params: `{"level":"basic"}`},
			},
		},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"application/json"},
		Skills: []Skill{
			{
				ID: "summarize", Name: "Summarize", Description: "Summarizes a document.",
				Tags: []string{"text", "summary"}, Examples: []string{"Summarize this report"},
				Index: 0,
			},
			{
				ID: "translate", Name: "Translate", Description: "Translates text.",
				Tags:                 []string{"text", "language"},
				InputModes:           []string{"text/plain"},
				OutputModes:          []string{"text/plain", "image/*"},
				SecurityRequirements: []SecurityRequirement{{"oauth": {"translate"}}},
				Index:                1,
			},
		},
		SecuritySchemes: map[string]SecurityScheme{
			"bearer": {Type: "http", Scheme: "bearer", BearerFormat: "JWT", Description: "Bearer token"},
			"key":    {Type: "apiKey", Name: "X-API-Key", Location: "header"},
			"oauth": {Type: "oauth2", Flows: map[string]OAuthFlow{
				"clientCredentials": {
					TokenURL: "https://auth.example.com/token",
					Scopes:   map[string]string{"read": "Read access", "translate": "Use translation"},
				},
			}},
		},
		SecurityRequirements: []SecurityRequirement{{"bearer": {}}, {"oauth": {"read"}}},
	}
	c.buildSkillIndex()
	return c
}

// modified returns testCard changed by f, with its skills re-sorted and
// re-indexed as Parse leaves them.
func modified(f func(c *Card)) *Card {
	c := testCard()
	f(c)
	slices.SortStableFunc(c.Skills, func(a, b Skill) int { return cmp.Compare(a.ID, b.ID) })
	c.buildSkillIndex()
	return c
}

// modifiedPair returns testCard modified by p (the pinned card) and by l
// (the live card); a nil function leaves its card as testCard.
func modifiedPair(p, l func(c *Card)) (pinned, live *Card) {
	pinned, live = testCard(), testCard()
	if p != nil {
		pinned = modified(p)
	}
	if l != nil {
		live = modified(l)
	}
	return pinned, live
}

// fixture parses the real card whose file name starts with prefix ("027").
func fixture(t testing.TB, prefix string) *Card {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureCards, prefix+"-*.json"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("fixture %s: %d files, %v", prefix, len(paths), err)
	}
	raw, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%s) = %v", filepath.Base(paths[0]), err)
	}
	return c
}

// checkCase is one row of a check's table test.
type checkCase struct {
	name         string
	pinned, live *Card
	want         []Finding
}

// runCheck runs a check's table test; call is the check's name for failures.
func runCheck(t *testing.T, call string, check func(p, l *Card) []Finding, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.pinned, tc.live)
			assertFindings(t, call, got, tc.want)
			if again := check(tc.pinned, tc.live); !reflect.DeepEqual(got, again) {
				t.Errorf("%s is not deterministic: %s then %s", call, dump(got), dump(again))
			}
			if self := check(tc.live, tc.live); len(self) != 0 {
				t.Errorf("%s(live, live) = %s, want none", call, dump(self))
			}
		})
	}
}

// flipCases are the cases of a rule on a boolean capability that testCard
// declares on: "turned off" (off applied to the live card) wants whenOff,
// "turned on" (off applied to the pinned card) wants whenOn.
func flipCases(off func(*Card), whenOff, whenOn []Finding) []checkCase {
	return []checkCase{
		{name: "turned off", pinned: testCard(), live: modified(off), want: whenOff},
		{name: "turned on", pinned: modified(off), live: testCard(), want: whenOn},
	}
}

// testStringFunc checks fn on each case's input; name is fn's name for
// failures.
func testStringFunc(t *testing.T, name string, fn func(string) string, cases []struct{ in, want string }) {
	t.Helper()
	for _, tc := range cases {
		if got := fn(tc.in); got != tc.want {
			t.Errorf("%s(%q) = %q, want %q", name, tc.in, got, tc.want)
		}
	}
}

func assertFindings(t *testing.T, call string, got, want []Finding) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s =\n%s\nwant\n%s", call, dump(got), dump(want))
	}
}

func dump(fs []Finding) string {
	if len(fs) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, f := range fs {
		j, err := json.Marshal(f)
		if err != nil {
			j = []byte(err.Error())
		}
		b.WriteString("  ")
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func ruleIDs(fs []Finding) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.Rule
	}
	return ids
}

func TestDiffIdentical(t *testing.T) {
	same := testCard()
	for _, tc := range []struct {
		name         string
		pinned, live *Card
	}{
		{"same pointer", same, same},
		{"equal literals", testCard(), testCard()},
		{"both nil", nil, nil},
		{"empty cards", &Card{}, &Card{}},
		{"set order, case, parameters and legacy spelling", testCard(), modified(func(c *Card) {
			c.DefaultInputModes = []string{"APPLICATION/JSON", "text; charset=utf-8"}
			c.Skills[1].OutputModes = []string{"image/*", "Text/Plain", "text/plain"}
			c.Skills[0].Tags = []string{"summary", "text"}
			c.SecurityRequirements = []SecurityRequirement{{"oauth": {"read", "read"}}, {"bearer": nil}}
			c.SecuritySchemes["bearer"] = SecurityScheme{Type: "http", Scheme: "Bearer", BearerFormat: "JWT", Description: "Bearer token"}
			c.SecuritySchemes["key"] = SecurityScheme{Type: "apiKey", Name: "x-api-key", Location: "Header"}
		})},
		{"skills served in another order", testCard(), modified(func(c *Card) {
			c.Skills[0].Index, c.Skills[1].Index = 1, 0
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertFindings(t, "Diff(pinned, live)", Diff(tc.pinned, tc.live), nil)
		})
	}
}

// TestDiffWriteUps reproduces the card changes of the two field write-ups in
// the project's reference notes (a pinning rotation; skill modes mutated
// without a version bump).
func TestDiffWriteUps(t *testing.T) {
	t.Run("pinning rotation", func(t *testing.T) {
		// T0: streaming, skills [summarize], bearer. T0+40s: streaming off for
		// maintenance, skills [summarize, translate], bearer replaced by oauth2.
		pinned := modified(func(c *Card) {
			c.Skills = c.Skills[:1]
			c.SecuritySchemes = map[string]SecurityScheme{"bearer": c.SecuritySchemes["bearer"]}
			c.SecurityRequirements = []SecurityRequirement{{"bearer": {}}}
		})
		live := modified(func(c *Card) {
			c.Capabilities.Streaming = false
			c.Skills[1].SecurityRequirements = nil
			c.SecuritySchemes = map[string]SecurityScheme{"oauth": c.SecuritySchemes["oauth"]}
			c.SecurityRequirements = []SecurityRequirement{{"oauth": {"read"}}}
		})
		got := Diff(pinned, live)
		want := []string{
			RuleSecurityRequirementsChanged, RuleSecuritySchemeRemoved, RuleStreamingDisabled,
			RuleContentChangedWithoutVersion,
			RuleSecuritySchemeAdded, RuleSkillAdded,
		}
		if ids := ruleIDs(got); !slices.Equal(ids, want) {
			t.Errorf("Diff(pinned, live) rules = %v, want %v\n%s", ids, want, dump(got))
		}
		if i := slices.IndexFunc(got, func(f Finding) bool { return f.Rule == RuleSkillAdded }); i < 0 || got[i].Skill != "translate" {
			t.Errorf("Diff(pinned, live) does not name the added skill translate:\n%s", dump(got))
		}
	})
	t.Run("skill modes mutated without a version bump", func(t *testing.T) {
		// summarize-v2 changes its output from text/markdown to application/json;
		// version stays "1.0".
		pinned := modified(func(c *Card) {
			c.Version = "1.0"
			c.Skills[0].ID = "summarize-v2"
			c.Skills[0].InputModes = []string{"text/plain"}
			c.Skills[0].OutputModes = []string{"text/markdown"}
		})
		live := modified(func(c *Card) {
			c.Version = "1.0"
			c.Skills[0].ID = "summarize-v2"
			c.Skills[0].InputModes = []string{"text/plain"}
			c.Skills[0].OutputModes = []string{"application/json"}
		})
		want := []Finding{
			{
				Rule: RuleSkillOutputModesChanged, Severity: Breaking, Path: "/skills/0/outputModes",
				Before: []string{"text/markdown"}, After: []string{"application/json"},
				Message: `skill "summarize-v2" no longer produces "text/markdown" and may now produce "application/json"`,
				Skill:   "summarize-v2",
			},
			{
				Rule: RuleContentChangedWithoutVersion, Severity: Warning, Path: "/version",
				Before: "1.0", After: "1.0",
				Message: `card content changed (skills) but its version is still "1.0"`,
			},
		}
		assertFindings(t, "Diff(pinned, live)", Diff(pinned, live), want)
	})
	t.Run("description-only edit", func(t *testing.T) {
		live := modified(func(c *Card) {
			c.Description = "Plans routes, draws maps and estimates travel times."
			c.Skills[0].Description = "Summarizes any document."
		})
		for _, f := range Diff(testCard(), live) {
			if f.Rule != RuleDescriptiveTextChanged || f.Severity != Info {
				t.Errorf("Diff(pinned, live) has %s (%v), want only info descriptive-text-changed", f.Rule, f.Severity)
			}
		}
	})
}

func TestDiffOrder(t *testing.T) {
	pinned := testCard()
	live := modified(func(c *Card) {
		c.Version = "2.0.0"
		c.Name = "Planner"
		c.Capabilities.Streaming = false
		c.Capabilities.PushNotifications = false
		c.Skills = append(c.Skills, Skill{ID: "geocode", Index: 2})
		c.Skills[0].Index, c.Skills[1].Index = 0, 1
		c.DefaultOutputModes = append(c.DefaultOutputModes, "image/png")
	})
	got := Diff(pinned, live)
	want := []string{
		RulePushNotificationsDisabled, RuleStreamingDisabled,
		RuleDefaultOutputModesChanged, RuleSkillOutputModesChanged,
		RuleCardVersionChanged, RuleDescriptiveTextChanged, RuleSkillAdded,
	}
	if ids := ruleIDs(got); !slices.Equal(ids, want) {
		t.Fatalf("Diff(pinned, live) rules = %v, want %v\n%s", ids, want, dump(got))
	}
	if !slices.IsSortedFunc(got, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), strings.Compare(a.Rule, b.Rule), strings.Compare(a.Path, b.Path))
	}) {
		t.Errorf("Diff(pinned, live) is not sorted by severity, rule, path:\n%s", dump(got))
	}
	for i := 0; i < 3; i++ {
		if again := Diff(pinned, live); !reflect.DeepEqual(again, got) {
			t.Fatalf("Diff is not deterministic:\n%s\nthen\n%s", dump(got), dump(again))
		}
	}
}

func TestDiffDoesNotModifyInputs(t *testing.T) {
	pinned, live := testCard(), modified(func(c *Card) {
		c.Skills[0].ID = "abstract"
		c.DefaultInputModes = []string{"TEXT", "application/json;q=1"}
	})
	p0, l0 := testCard(), modified(func(c *Card) {
		c.Skills[0].ID = "abstract"
		c.DefaultInputModes = []string{"TEXT", "application/json;q=1"}
	})
	Diff(pinned, live)
	if !reflect.DeepEqual(pinned, p0) || !reflect.DeepEqual(live, l0) {
		t.Error("Diff modified its inputs")
	}
}

// TestDiffFixtures diffs real cards: the pairs the fixture manifest names, and
// every card against itself.
func TestDiffFixtures(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pinned, live string
		want         []string // rule ids in output order
	}{
		{"identical twins across generations", "006", "007", nil},
		{"nulls and string booleans cleaned up", "017", "018", nil},
		{"signed variant adds an extension, same version", "012", "013",
			[]string{RuleContentChangedWithoutVersion, RuleExtensionAdded}},
		{"v1.0 card to its v0.3 twin drops protocol 1.0", "024", "025",
			[]string{RuleProtocolVersionChanged, RuleContentChangedWithoutVersion}},
		{"v0.3 card to its v1.0 twin adds protocol 1.0", "025", "024",
			[]string{RuleContentChangedWithoutVersion, RuleProtocolVersionChanged}},
		{"public to extended card", "032", "033",
			[]string{RuleCardVersionChanged, RuleDescriptiveTextChanged, RuleDescriptiveTextChanged, RuleSkillAdded}},
		{"extended to public card", "033", "032",
			[]string{RuleSkillRemoved, RuleCardVersionChanged, RuleDescriptiveTextChanged, RuleDescriptiveTextChanged}},
		{"v0.3 spec sample to v1.0 spec sample", "003", "004",
			[]string{RuleProtocolVersionChanged, RuleProtocolVersionChanged, RuleProtocolVersionChanged, RuleContentChangedWithoutVersion}},
		{"v1.0 spec sample to a2a-go's", "004", "027",
			[]string{RuleSecurityRequirementsChanged, RuleContentChangedWithoutVersion}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(fixture(t, tc.pinned), fixture(t, tc.live))
			if ids := ruleIDs(got); !slices.Equal(ids, tc.want) {
				t.Errorf("Diff(%s, %s) rules = %v, want %v\n%s", tc.pinned, tc.live, ids, tc.want, dump(got))
			}
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("json.Marshal(Diff(%s, %s)) = %v", tc.pinned, tc.live, err)
			}
		})
	}

	paths, _ := filepath.Glob(filepath.Join(fixtureCards, "*.json"))
	for _, p := range paths {
		raw, _ := os.ReadFile(p)
		c, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse(%s) = %v", filepath.Base(p), err)
		}
		c2, _ := Parse(raw)
		if got := Diff(c, c2); len(got) != 0 {
			t.Errorf("Diff(%s, itself) =\n%s\nwant none", filepath.Base(p), dump(got))
		}
	}
}

func TestDiffFixtureDetail(t *testing.T) {
	got := Diff(fixture(t, "024"), fixture(t, "025"))
	// 025 is a v0.3 card: its interfaces take the top-level protocolVersion,
	// and the path points where 025 serves it.
	want := Finding{
		Rule: RuleProtocolVersionChanged, Severity: Breaking,
		Path:    "/protocolVersion",
		Before:  []string{"1.0", "0.3"},
		After:   []string{"0.3.0"},
		Message: `protocol version of interface JSONRPC "http://localhost:10999" changed from "1.0", "0.3" to "0.3.0"`,
	}
	if len(got) == 0 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("Diff(024, 025)[0] =\n%s\nwant\n%s", dump(got[:min(1, len(got))]), dump([]Finding{want}))
	}
}

func TestPointer(t *testing.T) {
	for _, tc := range []struct {
		tokens []string
		want   string
	}{
		{nil, ""},
		{[]string{"skills", "0", "inputModes"}, "/skills/0/inputModes"},
		{[]string{"securitySchemes", "a/b~c"}, "/securitySchemes/a~1b~0c"},
		{[]string{"scopes", "https://www.googleapis.com/auth/maps"}, "/scopes/https:~1~1www.googleapis.com~1auth~1maps"},
		{[]string{"~1"}, "/~01"},
		{[]string{""}, "/"},
	} {
		if got := pointer(tc.tokens...); got != tc.want {
			t.Errorf("pointer(%q) = %q, want %q", tc.tokens, got, tc.want)
		}
	}
}

// BenchmarkDiff diffs two real ~3.5 KiB cards (a2a-go's georoute planner and a
// copy with a skill's modes, a capability, a scheme and the text changed) and
// a card with itself.
func BenchmarkDiff(b *testing.B) {
	pinned := fixture(b, "027")
	raw, err := os.ReadFile(filepath.Join(fixtureCards, "027-a2a-go-json-test-georoute-planner.json"))
	if err != nil {
		b.Fatal(err)
	}
	mutated := strings.NewReplacer(
		`"pushNotifications": true`, `"pushNotifications": false`,
		`"image/jpeg",`, ``,
		`"profile", "email"`, `"profile"`,
		`Traffic-Aware Route Optimizer`, `Route Optimizer`,
		`"text/html"`, `"text/html", "application/pdf"`,
	).Replace(string(raw))
	live, err := Parse([]byte(mutated))
	if err != nil {
		b.Fatal(err)
	}
	if len(Diff(pinned, live)) == 0 {
		b.Fatal("mutated card shows no drift")
	}
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw) + len(mutated)))
		for b.Loop() {
			Diff(pinned, live)
		}
	})
	b.Run("identical", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(2 * len(raw)))
		for b.Loop() {
			Diff(pinned, pinned)
		}
	})
}

func TestRuleIDs(t *testing.T) {
	fs := []Finding{{Rule: RuleSkillRemoved}, {Rule: RuleStreamingDisabled}, {Rule: RuleSkillRemoved}}
	if got, want := RuleIDs(fs), []string{RuleSkillRemoved, RuleStreamingDisabled}; !slices.Equal(got, want) {
		t.Errorf("RuleIDs = %v, want %v (each once, in order of first finding)", got, want)
	}
	if got := RuleIDs(nil); got == nil || len(got) != 0 {
		t.Errorf("RuleIDs(nil) = %#v, want an empty list (JSON [])", got)
	}
}
