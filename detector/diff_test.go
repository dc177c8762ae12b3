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
	"time"

	"github.com/carddrift/carddrift/detector/jcs"
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

// checkCase is one row of a check's table test; a nil card is testCard().
type checkCase struct {
	name         string
	pinned, live *Card
	want         []Finding
}

// runCheck runs a check's table test; call is the check's name for failures.
func runCheck(t *testing.T, call string, check func(p, l *Card) []Finding, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		pinned, live := cmp.Or(tc.pinned, testCard()), cmp.Or(tc.live, testCard())
		t.Run(tc.name, func(t *testing.T) {
			got := check(pinned, live)
			assertFindings(t, call, got, tc.want)
			if again := check(pinned, live); !reflect.DeepEqual(got, again) {
				t.Errorf("%s is not deterministic: %s then %s", call, dump(got), dump(again))
			}
			if self := check(live, live); len(self) != 0 {
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

// memoCard is a fixture card with its digest.
type memoCard struct {
	name, digest string
	card         *Card
}

func memoCards(t testing.TB) []memoCard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureCards, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture cards: %v", err)
	}
	var out []memoCard
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(raw)
		if err != nil {
			continue // the fixtures that do not parse
		}
		d, err := Digest(raw)
		if err != nil {
			t.Fatalf("Digest(%s): %v", f, err)
		}
		out = append(out, memoCard{name: filepath.Base(f), digest: d, card: c})
	}
	return out
}

// parseDigest is raw parsed and its digest, or false when either fails.
func parseDigest(raw []byte) (*Card, string, bool) {
	c, err := Parse(raw)
	if err != nil {
		return nil, "", false
	}
	d, err := Digest(raw)
	return c, d, err == nil
}

// The memo is Diff: for every pair of fixture cards, the first call (a
// miss) and the second (a hit) equal Diff, the oracle.
func TestDiffMemoEqualsDiff(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 30)
	memoized := map[diffKey]bool{} // fixtures may share a digest
	for _, p := range cards {
		for _, l := range cards {
			want := Diff(p.card, l.card)
			for _, call := range []string{"miss", "hit"} {
				if got := m.Diff(p.digest, l.digest, p.card, l.card); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s → %s (%s): memo =\n%s\nwant Diff's\n%s", p.name, l.name, call, dump(got), dump(want))
				}
			}
			memoized[diffKey{p.digest, l.digest, signatureState(p.card), signatureState(l.card)}] = true
		}
	}
	if got := m.Len(); got != len(memoized) {
		t.Errorf("memo holds %d pairs, want %d (one per pair of digests and signature states)", got, len(memoized))
	}
}

// Signatures come from verification, not from the digest: one body with
// other verification outcomes, or served with and without signatures, is
// another pair — each diffed once and each Diff's — and the same outcomes
// again are a hit.
func TestDiffMemoSignatureState(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 20)
	base, live := *cards[0].card, *cards[1].card
	variants := []func(c *Card){
		func(c *Card) {},
		func(c *Card) { c.HasSignatures = true },
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t1", Source: SourceTrusted, Verified: true, Reason: SignatureVerified}}
		},
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t2", Source: SourceTrusted, Verified: true, Reason: SignatureVerified}}
		},
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t1", Source: SourceJKU, Verified: true, Reason: SignatureVerified}}
		},
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t1", Source: SourceTrusted, Reason: SignatureInvalid}}
		},
		func(c *Card) {
			c.Conformance = append(slices.Clip(c.Conformance), Nonconformance{Path: "/signatures", Message: "not an array"})
		},
	}
	for round := range 2 {
		for i, pv := range variants {
			for j, lv := range variants {
				p, l := base, live
				pv(&p)
				lv(&l)
				want := Diff(&p, &l)
				if got := m.Diff(cards[0].digest, cards[1].digest, &p, &l); !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d, pinned variant %d, live variant %d: memo =\n%s\nwant Diff's\n%s", round, i, j, dump(got), dump(want))
				}
			}
		}
		if got, want := m.Len(), len(variants)*len(variants); got != want {
			t.Fatalf("round %d: memo holds %d pairs, want %d (one per pair of signature states)", round, got, want)
		}
	}
}

// signatureState encodes every field of a Signature: a field added to it
// must be added there too, or two outcomes that differ in it would share a
// diff.
func TestSignatureStateCoversSignature(t *testing.T) {
	if n := reflect.TypeFor[Signature]().NumField(); n != 7 {
		t.Fatalf("Signature has %d fields, signatureState encodes 7: add the new one to it", n)
	}
	a := &Card{HasSignatures: true, Signatures: []Signature{{KeyID: "ab", Alg: "c"}}}
	b := &Card{HasSignatures: true, Signatures: []Signature{{KeyID: "a", Alg: "bc"}}}
	if signatureState(a) == signatureState(b) {
		t.Error("two signatures that differ only in where a field ends share a state")
	}
	if s := signatureState(&Card{}); s != "" {
		t.Errorf("unsigned card's state = %q, want empty", s)
	}
}

// What the memo hands out is shared: appending to it never writes into it.
func TestDiffMemoSharedFindings(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 20)
	var p, l memoCard
	for _, a := range cards {
		for _, b := range cards {
			if len(Diff(a.card, b.card)) > 1 {
				p, l = a, b
			}
		}
	}
	if p.card == nil {
		t.Fatal("no pair with findings among the fixtures")
	}
	first := m.Diff(p.digest, l.digest, p.card, l.card)
	if cap(first) != len(first) {
		t.Fatalf("cap %d != len %d: an append would write into the memo", cap(first), len(first))
	}
	want := slices.Clone(first)
	grown := append(first, Finding{Rule: "task-level"})
	grown[0].Message = "changed by a caller"
	if got := m.Diff(p.digest, l.digest, p.card, l.card); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a caller appended: memo =\n%s\nwant\n%s", dump(got), dump(want))
	}
}

// The memo is bounded in bytes: the least recently used pair goes first,
// and a pair recomputed after eviction is still Diff's.
func TestDiffMemoBound(t *testing.T) {
	cards := memoCards(t)
	var pairs [][2]memoCard
	for _, a := range cards {
		for _, b := range cards {
			if a.digest != b.digest {
				pairs = append(pairs, [2]memoCard{a, b})
			}
		}
	}
	big := NewDiffMemo(1 << 30)
	for _, pr := range pairs {
		big.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card)
	}
	bound := big.Bytes() / 4
	m := NewDiffMemo(bound)
	for _, pr := range pairs {
		m.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card)
		if m.Bytes() > bound {
			t.Fatalf("memo counts %d bytes, over its bound %d", m.Bytes(), bound)
		}
	}
	if m.Len() == 0 || m.Len() >= len(pairs) {
		t.Errorf("memo holds %d of %d pairs, want some but not all", m.Len(), len(pairs))
	}
	pr := pairs[0] // the oldest: evicted
	if got, want := m.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card), Diff(pr[0].card, pr[1].card); !reflect.DeepEqual(got, want) {
		t.Fatalf("recomputed after eviction: %s, want %s", dump(got), dump(want))
	}
	if NewDiffMemo(0) != nil || NewDiffMemo(-1) != nil {
		t.Error("a memo with no bytes is not nil")
	}
	var none *DiffMemo
	if got, want := none.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card), Diff(pr[0].card, pr[1].card); !reflect.DeepEqual(got, want) {
		t.Error("the nil memo is not Diff")
	}
}

// FuzzDiffMemo compares the memo with Diff, its oracle, on parsed inputs:
// a miss, a hit, and the swapped pair. The seed corpus in
// testdata/fuzz/FuzzDiffMemo pairs fixture cards. Run:
// go test ./detector -run '^$' -fuzz FuzzDiffMemo
func FuzzDiffMemo(f *testing.F) {
	m := NewDiffMemo(8 << 20)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, da, okA := parseDigest(a)
		pb, db, okB := parseDigest(b)
		if !okA || !okB {
			return
		}
		for _, pr := range [][2]*Card{{pa, pb}, {pb, pa}} {
			dp, dl := da, db
			if pr[0] == pb {
				dp, dl = db, da
			}
			want := Diff(pr[0], pr[1])
			for range 2 {
				if got := m.Diff(dp, dl, pr[0], pr[1]); !reflect.DeepEqual(got, want) {
					t.Fatalf("memo =\n%s\nwant Diff's\n%s", dump(got), dump(want))
				}
			}
		}
	})
}

// BenchmarkDiffMemo reports a memo hit (goal: under 1 µs) against the Diff
// it saves, timed alternately on every iteration so that machine noise hits
// both alike: ns/hit, ns/diff and diff/hit.
func BenchmarkDiffMemo(b *testing.B) {
	cards := memoCards(b)
	var p, l memoCard
	for _, c := range cards {
		switch {
		case strings.HasPrefix(c.name, "001-"):
			p = c
		case strings.HasPrefix(c.name, "002-"):
			l = c
		}
	}
	m := NewDiffMemo(1 << 20)
	m.Diff(p.digest, l.digest, p.card, l.card)
	var hit, diff time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		for range 100 {
			m.Diff(p.digest, l.digest, p.card, l.card)
		}
		t1 := time.Now()
		Diff(p.card, l.card)
		hit += t1.Sub(t0)
		diff += time.Since(t1)
		n++
	}
	hitNS := float64(hit.Nanoseconds()) / float64(100*n)
	diffNS := float64(diff.Nanoseconds()) / float64(n)
	b.ReportMetric(hitNS, "ns/hit")
	b.ReportMetric(diffNS, "ns/diff")
	b.ReportMetric(diffNS/hitNS, "diff/hit")
}

// FuzzDiff parses two inputs and diffs them. Diff must not panic, must be
// deterministic, must find nothing between a card and itself, must keep its
// own invariants (registered card-level rules, severities within the rule's,
// JSON pointers, messages, sorted output, marshalable values), and its
// mirrored rules must mirror when the cards swap places.
//
// The seed corpus in testdata/fuzz/FuzzDiff pairs the real cards of
// testdata/cards. Run: go test ./detector -run '^$' -fuzz FuzzDiff
func FuzzDiff(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, err := Parse(a)
		if err != nil {
			return
		}
		again, err := Parse(a)
		if err != nil {
			t.Fatalf("Parse(a) failed the second time: %v", err)
		}
		if self := Diff(pa, again); len(self) != 0 {
			t.Fatalf("Diff(a, a) =\n%s\nwant none", dump(self))
		}
		pb, err := Parse(b)
		if err != nil {
			return
		}
		got := Diff(pa, pb)
		if second := Diff(pa, pb); !reflect.DeepEqual(got, second) {
			t.Fatalf("Diff(a, b) is not deterministic:\n%s\nthen\n%s", dump(got), dump(second))
		}
		checkInvariants(t, got, a, b)
		back := Diff(pb, pa)
		checkInvariants(t, back, b, a)
		for _, m := range [][2]string{
			{RuleSkillAdded, RuleSkillRemoved},
			{RuleStreamingEnabled, RuleStreamingDisabled},
			{RulePushNotificationsEnabled, RulePushNotificationsDisabled},
			{RuleSecuritySchemeAdded, RuleSecuritySchemeRemoved},
		} {
			if x, y := count(got, m[0]), count(back, m[1]); x != y {
				t.Errorf("Diff(a, b) has %d %s but Diff(b, a) has %d %s", x, m[0], y, m[1])
			}
		}
	})
}

// checkInvariants checks findings between the cards served as pinned and
// live: registered rules, severities within the rule's, paths that resolve in
// one of the two served cards, messages, order.
func checkInvariants(t *testing.T, fs []Finding, pinned, live []byte) {
	t.Helper()
	pt, _ := jcs.Parse(pinned, jcs.Limits{})
	lt, _ := jcs.Parse(live, jcs.Limits{})
	for i, f := range fs {
		r, ok := RuleByID(f.Rule)
		if !ok || r.TaskLevel {
			t.Fatalf("finding of rule %q, want a registered card-level rule", f.Rule)
		}
		if f.Severity < Info || f.Severity > r.Severity {
			t.Fatalf("%s finding has severity %v, rule maximum %v", f.Rule, f.Severity, r.Severity)
		}
		if !resolves(&lt, f.Path) && !resolves(&pt, f.Path) || f.Message == "" {
			t.Fatalf("%s finding has path %q (resolving in neither card) and message %q", f.Rule, f.Path, f.Message)
		}
		if i > 0 {
			p := fs[i-1]
			if p.Severity < f.Severity || p.Severity == f.Severity && p.Rule > f.Rule ||
				p.Severity == f.Severity && p.Rule == f.Rule && p.Path > f.Path {
				t.Fatalf("findings out of order:\n%s", dump(fs))
			}
		}
	}
	if _, err := json.Marshal(fs); err != nil {
		t.Fatalf("json.Marshal(findings) = %v", err)
	}
}

func count(fs []Finding, rule string) int {
	n := 0
	for _, f := range fs {
		if f.Rule == rule {
			n++
		}
	}
	return n
}
