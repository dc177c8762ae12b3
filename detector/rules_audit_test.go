package detector

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The registry audits itself: ids, mirrors, messages, the public contract's
// minimum ids, a constructed card pair that makes every rule fire, and what
// every rule touches.

var kebabCase = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// mirrorWaivers lists the -added/-removed and -enabled/-disabled rules that
// deliberately have no mirror, with the reason.
var mirrorWaivers = map[string]string{
	RuleOAuthScopeRemoved: "a scope added to a flow asks nothing of a client that does not request it; " +
		"a requirement that starts demanding it is security-requirements-changed, and the " +
		"version-bump check still sees the new scope",
}

// designMinimumIDs are the rule ids contract v1.0 promised ("Minimum rule
// ids"). The contract in schemas/README.md may add ids but never drop one of
// these.
var designMinimumIDs = []string{
	"skill-removed", "skill-added", "skill-input-modes-changed", "skill-output-modes-changed",
	"default-input-modes-changed", "default-output-modes-changed", "streaming-disabled",
	"streaming-enabled", "push-notifications-disabled", "push-notifications-enabled",
	"security-scheme-added", "security-scheme-removed", "security-scheme-changed",
	"oauth-scope-removed", "security-requirements-changed", "protocol-version-changed",
	"interface-changed", "extended-card-changed", "extension-removed", "extension-required-added",
	"card-version-changed", "content-changed-without-version-bump", "descriptive-text-changed",
	"unmodeled-skill", "artifact-type-undeclared", "blind-retry",
}

// notYetBuilt names the rule ids the public contract lists that the detector
// does not register yet, with what is missing. TestRegistryDesignIDs fails
// when one of them is registered: delete its line when the rule lands, so
// this set only ever shrinks.
var notYetBuilt = map[string]string{}

// messagePlaceholders are the names templates may use (see messages.go).
var messagePlaceholders = map[string]bool{
	"skill": true, "scheme": true, "flow": true, "scope": true, "uri": true, "url": true,
	"binding": true, "before": true, "after": true, "removed": true, "added": true,
	"fields": true, "facets": true, "version": true,
	"artifact": true, "mediaType": true, "modes": true, "method": true, "code": true, "attempt": true,
	"reason": true, "signer": true, "digests": true, "window": true,
}

func TestRegistryIDs(t *testing.T) {
	areas := map[string]bool{
		AreaSkills: true, AreaModes: true, AreaCapabilities: true, AreaExtensions: true,
		AreaSecurity: true, AreaInterfaces: true, AreaVersion: true, AreaText: true, AreaConformance: true,
		AreaSignatures: true, AreaTask: true,
	}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("rule %q registered twice", r.ID)
		}
		seen[r.ID] = true
		if !kebabCase.MatchString(r.ID) {
			t.Errorf("rule id %q is not kebab-case", r.ID)
		}
		if r.Severity < Info || r.Severity > Breaking {
			t.Errorf("rule %q: severity %v", r.ID, r.Severity)
		}
		if !areas[r.Area] {
			t.Errorf("rule %q: unknown area %q", r.ID, r.Area)
		}
		if r.TaskLevel != (r.Check == nil) {
			t.Errorf("rule %q: TaskLevel %v with Check set %v, want exactly one", r.ID, r.TaskLevel, r.Check != nil)
		}
		if r.TaskLevel != (r.Area == AreaTask) {
			t.Errorf("rule %q: TaskLevel %v in area %q", r.ID, r.TaskLevel, r.Area)
		}
		if !r.Touches.valid() {
			t.Errorf("rule %q declares no Touches (%v)", r.ID, r.Touches)
		}
		if got, ok := RuleByID(r.ID); !ok || got.ID != r.ID {
			t.Errorf("RuleByID(%q) = %q, %v", r.ID, got.ID, ok)
		}
	}
	rs := Rules()
	rs[0].ID = "changed"
	if Rules()[0].ID == "changed" {
		t.Error("Rules() returns the registry itself, want a copy")
	}
	if _, ok := RuleByID("no-such-rule"); ok {
		t.Error(`RuleByID("no-such-rule") found a rule`)
	}
}

func TestRegistryMirrors(t *testing.T) {
	pairs := [][2]string{{"-added", "-removed"}, {"-enabled", "-disabled"}}
	used := map[string]bool{}
	for _, r := range Rules() {
		for _, p := range pairs {
			for i, suffix := range p {
				base, ok := strings.CutSuffix(r.ID, suffix)
				if !ok {
					continue
				}
				mirror := base + p[1-i]
				if _, ok := RuleByID(mirror); ok {
					continue
				}
				if reason := mirrorWaivers[r.ID]; reason != "" {
					used[r.ID] = true
					continue
				}
				t.Errorf("rule %q has no mirror %q and no waiver", r.ID, mirror)
			}
		}
	}
	for id := range mirrorWaivers {
		if !used[id] {
			t.Errorf("waiver for %q is stale: the rule is unregistered or has its mirror", id)
		}
	}
}

// contractDoc is the guide to the public contract, which lists the rule ids
// and carries the rule catalogue.
const contractDoc = "../schemas/README.md"

// contractRuleIDs reads the rule ids from the "Minimum rule ids:" paragraph
// of the public contract (schemas/README.md).
func contractRuleIDs(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\nMinimum rule ids:")
	if !ok {
		t.Fatal(`schemas/README.md has no "Minimum rule ids:" paragraph`)
	}
	para, _, _ := strings.Cut(rest, "\n\n")
	var ids []string
	for _, m := range regexp.MustCompile("`([a-z0-9-]+)`").FindAllStringSubmatch(para, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// TestRegistryDesignIDs holds the registry to the public contract in
// schemas/README.md: every rule id the contract lists is registered, or
// named in notYetBuilt; nothing in notYetBuilt is registered or missing from
// the contract; and the contract still lists every v1.0 minimum id. The
// registry may have more ids than the contract.
func TestRegistryDesignIDs(t *testing.T) {
	ids := contractRuleIDs(t)
	listed := map[string]bool{}
	for _, id := range ids {
		listed[id] = true
	}
	for _, id := range designMinimumIDs {
		if !listed[id] {
			t.Errorf("schemas/README.md's public contract no longer lists minimum rule %q", id)
		}
	}
	for _, id := range ids {
		_, registered := RuleByID(id)
		_, pending := notYetBuilt[id]
		switch {
		case registered && pending:
			t.Errorf("contract rule %q is registered now: delete it from notYetBuilt", id)
		case !registered && !pending:
			t.Errorf("contract rule %q is not registered (and not in notYetBuilt)", id)
		}
	}
	for id := range notYetBuilt {
		if !listed[id] {
			t.Errorf("notYetBuilt names %q, which schemas/README.md's public contract does not list", id)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the rule catalogue in schemas/README.md from the registry")

const (
	catalogueBegin = "<!-- BEGIN rule catalogue (generated: go test ./detector -run TestRuleCatalogue -update) -->\n"
	catalogueEnd   = "<!-- END rule catalogue -->"
)

// ruleCatalogue renders the registry as the Markdown table of the contract's
// rule catalogue: one row per rule, in the registry's order, with its
// message or each variant's.
func ruleCatalogue() string {
	var b strings.Builder
	b.WriteString("| rule | severity | area | touches | message |\n|---|---|---|---|---|\n")
	for _, r := range Rules() {
		var msgs []string
		if m, ok := messages[r.ID]; ok {
			msgs = append(msgs, m)
		}
		var variants []string
		for key := range messages {
			if v, ok := strings.CutPrefix(key, r.ID+"/"); ok {
				variants = append(variants, v)
			}
		}
		slices.Sort(variants)
		for _, v := range variants {
			msgs = append(msgs, v+": "+messages[r.ID+"/"+v])
		}
		msg := strings.ReplaceAll(strings.Join(msgs, "<br>"), "|", `\|`)
		b.WriteString("| `" + r.ID + "` | " + r.Severity.String() + " | " + r.Area + " | " + r.Touches.String() + " | " + msg + " |\n")
	}
	return b.String()
}

// TestRuleCatalogue keeps the rule catalogue of schemas/README.md equal to
// the registry, so the published table cannot miss a rule or disagree with
// its severity, area, Touch or message. With -update it rewrites the
// section between the markers.
func TestRuleCatalogue(t *testing.T) {
	doc, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(doc), catalogueBegin)
	if !ok {
		t.Fatalf("%s has no line %q", contractDoc, catalogueBegin)
	}
	got, tail, ok := strings.Cut(rest, catalogueEnd)
	if !ok {
		t.Fatalf("%s has no line %q after the catalogue", contractDoc, catalogueEnd)
	}
	want := ruleCatalogue()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(contractDoc, []byte(head+catalogueBegin+want+catalogueEnd+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the rule catalogue in %s is not the registry's: run go test ./detector -run TestRuleCatalogue -update\ngot:\n%s\nwant:\n%s", contractDoc, got, want)
}

var placeholder = regexp.MustCompile(`\{([^{}]*)\}`)

func TestRegistryMessages(t *testing.T) {
	for _, r := range Rules() {
		_, plain := messages[r.ID]
		variants := 0
		for key := range messages {
			if strings.HasPrefix(key, r.ID+"/") {
				variants++
			}
		}
		switch {
		case !plain && variants == 0:
			t.Errorf("rule %q has no message", r.ID)
		case plain && variants > 0:
			t.Errorf("rule %q has both a plain message and %d variants", r.ID, variants)
		}
	}
	for key, tmpl := range messages {
		id, _, _ := strings.Cut(key, "/")
		if _, ok := RuleByID(id); !ok {
			t.Errorf("message %q belongs to no registered rule", key)
		}
		if strings.TrimSpace(tmpl) == "" {
			t.Errorf("message %q is empty", key)
		}
		for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
			if !messagePlaceholders[m[1]] {
				t.Errorf("message %q uses unknown placeholder {%s}", key, m[1])
			}
		}
	}
	if got, want := render(RuleSkillRemoved, "skill", `"x"`), `skill "x" is no longer offered`; got != want {
		t.Errorf("render(skill-removed) = %q, want %q", got, want)
	}
	if got, want := render(RuleSkillRemoved), "skill {skill} is no longer offered"; got != want {
		t.Errorf("render(skill-removed) without values = %q, want %q", got, want)
	}
}

// firingCases make every card-level rule fire, and together every message
// variant appear. Each mutation starts from testCard.
var firingCases = []struct {
	name  string
	rules []string // rules that must be among the findings
	p, l  func(c *Card)
}{
	{
		name:  "skill renamed",
		rules: []string{RuleSkillRenamed, RuleContentChangedWithoutVersion},
		l:     func(c *Card) { c.Skills[0].ID = "abstract" },
	},
	{
		name:  "skill replaced by one of another contract",
		rules: []string{RuleSkillRemoved, RuleSkillAdded},
		l:     func(c *Card) { c.Skills[0].ID, c.Skills[0].Tags = "abstract", []string{"text"} },
	},
	{
		name: "every mode list narrowed; capabilities off; extension and scheme withdrawn",
		rules: []string{
			RuleSkillInputModesChanged, RuleSkillOutputModesChanged, RuleDefaultInputModesChanged,
			RuleDefaultOutputModesChanged, RuleStreamingDisabled, RulePushNotificationsDisabled,
			RuleExtendedCardChanged, RuleExtensionRemoved, RuleSecuritySchemeRemoved,
			RuleSecurityRequirementsChanged, RuleInterfaceChanged, RuleContentChangedWithoutVersion,
		},
		l: func(c *Card) {
			c.DefaultInputModes = c.DefaultInputModes[:1]
			c.DefaultOutputModes = nil
			c.Skills[1].InputModes = []string{}
			c.Skills[1].OutputModes = []string{"text/plain"}
			c.Capabilities = Capabilities{}
			delete(c.SecuritySchemes, "bearer")
			c.SecurityRequirements = c.SecurityRequirements[1:]
			c.Skills[1].SecurityRequirements = []SecurityRequirement{{"oauth": {"translate", "admin"}}}
			c.Interfaces = c.Interfaces[:1]
		},
	},
	{
		name: "every mode list widened; capabilities on; extension and scheme added",
		rules: []string{
			RuleSkillInputModesChanged, RuleSkillOutputModesChanged, RuleDefaultInputModesChanged,
			RuleDefaultOutputModesChanged, RuleStreamingEnabled, RulePushNotificationsEnabled,
			RuleExtendedCardChanged, RuleExtensionAdded, RuleSecuritySchemeAdded,
			RuleSecurityRequirementsChanged, RuleInterfaceChanged, RuleCardVersionChanged,
		},
		p: func(c *Card) { c.Capabilities = Capabilities{} },
		l: func(c *Card) {
			c.Version = "1.3.0"
			c.DefaultInputModes = append(c.DefaultInputModes, "image/png")
			c.DefaultOutputModes = append(c.DefaultOutputModes, "text/csv")
			c.Skills[1].InputModes = []string{"text/*"}
			c.Skills[1].OutputModes = []string{"*/*"}
			c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x"})
			c.SecuritySchemes["mtls"] = SecurityScheme{Type: "mutualTLS"}
			c.SecurityRequirements = append(c.SecurityRequirements, SecurityRequirement{"mtls": nil})
			c.Skills[1].SecurityRequirements = append(c.Skills[1].SecurityRequirements, SecurityRequirement{"mtls": nil})
			// A new preferred interface: added, and the preferred one changed.
			c.Interfaces = append([]Interface{{URL: "https://planner.example.com/rest", ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"}}, c.Interfaces...)
		},
	},
	{
		name: "every mode list replaced; interfaces reshuffled",
		rules: []string{
			RuleSkillInputModesChanged, RuleSkillOutputModesChanged, RuleDefaultInputModesChanged,
			RuleDefaultOutputModesChanged, RuleInterfaceChanged, RuleProtocolVersionChanged,
		},
		l: func(c *Card) {
			c.DefaultInputModes = []string{"application/xml"}
			c.DefaultOutputModes = []string{"text/markdown"}
			c.Skills[1].InputModes = []string{"application/pdf"}
			c.Skills[1].OutputModes = []string{"text/html"}
			c.Interfaces = []Interface{
				{URL: "https://planner.example.com/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "0.3", Tenant: "acme"},
				{URL: "https://planner.example.com/v2/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			}
		},
	},
	{
		name:  "every interface moved to another protocol version",
		rules: []string{RuleProtocolVersionChanged, RuleInterfaceChanged},
		l: func(c *Card) {
			c.Interfaces = []Interface{{URL: "https://planner.example.net/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}}
		},
	},
	{
		name: "security definitions changed",
		rules: []string{
			RuleSecuritySchemeChanged, RuleOAuthScopeRemoved, RuleExtensionRequiredAdded, RuleExtensionParamsChanged,
		},
		l: func(c *Card) {
			c.SecuritySchemes["bearer"] = SecurityScheme{Type: "http", Scheme: "basic"}
			delete(c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes, "read")
			c.Capabilities.Extensions[0].Required = true
			c.Capabilities.Extensions[0].Params = `{"level":"full"}`
		},
	},
	{
		name:  "a part that follows no schema",
		rules: []string{RuleCardNonconformant},
		l: func(c *Card) {
			c.Conformance = []Nonconformance{{Path: "/skills/0/examples/0", Message: "skill examples: an object where a string belongs"}}
		},
	},
	{
		name:  "signed now",
		rules: []string{RuleSignatureAdded},
		l:     func(c *Card) { c.Signatures = []Signature{testSigA} },
	},
	{
		name:  "no longer signed",
		rules: []string{RuleSignatureRemoved},
		p:     func(c *Card) { c.Signatures = []Signature{testSigA} },
	},
	{
		name:  "signature fails against the key that verified the pin",
		rules: []string{RuleSignatureInvalid},
		p:     func(c *Card) { c.Signatures = []Signature{testSigA} },
		l:     func(c *Card) { c.Signatures = []Signature{invalid(testSigA)} },
	},
	{
		name:  "signature fails against the pinned card's signer, which never verified it",
		rules: []string{RuleSignatureInvalid},
		p: func(c *Card) {
			c.Signatures, c.Raw = []Signature{invalid(testSigA)}, []byte(`{"a":1,"signatures":[{}]}`)
		},
		l: func(c *Card) {
			c.Signatures, c.Raw = []Signature{invalid(testSigA)}, []byte(`{"a":2,"signatures":[{}]}`)
		},
	},
	{
		name:  "signature fails against a key trusted for the agent",
		rules: []string{RuleSignatureInvalid},
		l:     func(c *Card) { c.Signatures = []Signature{invalid(testSigA)} },
	},
	{
		name:  "signed by another key",
		rules: []string{RuleSignerChanged},
		p:     func(c *Card) { c.Signatures = []Signature{testSigA} },
		l:     func(c *Card) { c.Signatures = []Signature{testSigB} },
	},
	{
		name:  "required extension relaxed",
		rules: []string{RuleExtensionRequiredRemoved},
		p:     func(c *Card) { c.Capabilities.Extensions[0].Required = true },
	},
	{
		name:  "every piece of descriptive text",
		rules: []string{RuleDescriptiveTextChanged},
		l: func(c *Card) {
			c.Name, c.Description = "Planner", "Plans."
			c.Provider = Provider{Organization: "Geo", URL: "https://geo.example.com"}
			c.DocumentationURL, c.IconURL = "https://docs.example.com/v2", ""
			c.Skills[0].Name, c.Skills[0].Description = "Sum", "Sums up."
			c.Skills[0].Tags, c.Skills[0].Examples = []string{"summary"}, []string{"Summarize"}
			b := c.SecuritySchemes["bearer"]
			b.Description = "JWT"
			c.SecuritySchemes["bearer"] = b
			c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes["read"] = "Read routes"
			c.Capabilities.Extensions[0].Description = "Tracing"
		},
	},
}

func TestEveryRuleFires(t *testing.T) {
	fired := map[string]bool{}
	variantSeen := map[string]bool{}
	templates := map[string]*regexp.Regexp{}
	for key, tmpl := range messages {
		literals := placeholder.Split(tmpl, -1)
		for i, lit := range literals {
			literals[i] = regexp.QuoteMeta(lit)
		}
		templates[key] = regexp.MustCompile("^" + strings.Join(literals, "(.*)") + "$")
	}
	for _, tc := range firingCases {
		t.Run(tc.name, func(t *testing.T) {
			p, l := modifiedPair(tc.p, tc.l)
			got := Diff(p, l)
			ids := map[string]bool{}
			for _, f := range got {
				ids[f.Rule] = true
				fired[f.Rule] = true
				r, ok := RuleByID(f.Rule)
				switch {
				case !ok:
					t.Errorf("finding of unregistered rule %q", f.Rule)
				case r.TaskLevel:
					t.Errorf("Diff emitted task-level rule %q", f.Rule)
				case f.Severity < Info || f.Severity > r.Severity:
					t.Errorf("%s finding has severity %v, rule maximum %v", f.Rule, f.Severity, r.Severity)
				}
				if !strings.HasPrefix(f.Path, "/") {
					t.Errorf("%s finding has path %q, want a JSON pointer into the card", f.Rule, f.Path)
				}
				if f.Message == "" || placeholder.MatchString(f.Message) {
					t.Errorf("%s finding has message %q", f.Rule, f.Message)
				}
				matched := false
				for key, re := range templates {
					if strings.HasPrefix(key+"/", f.Rule+"/") && re.MatchString(f.Message) {
						variantSeen[key] = true
						matched = true
					}
				}
				if !matched {
					t.Errorf("%s message %q matches none of its templates", f.Rule, f.Message)
				}
			}
			for _, id := range tc.rules {
				if !ids[id] {
					t.Errorf("Diff(pinned, live) has no %s finding:\n%s", id, dump(got))
				}
			}
		})
	}
	for _, r := range Rules() {
		if !r.TaskLevel && !fired[r.ID] {
			t.Errorf("no firing case makes rule %q fire", r.ID)
		}
	}
	for key := range messages {
		id, _, _ := strings.Cut(key, "/")
		if r, _ := RuleByID(id); !r.TaskLevel && !variantSeen[key] {
			t.Errorf("message %q never appeared in a firing case", key)
		}
	}
}

// touchCases give, per rule, a change that makes it fire and a task it
// touches and one it spares. Card-level rules take their finding from
// Diff(pinned, live), each side testCard changed by p and l; task-level rules
// from finding.
var touchCases = []struct {
	rule    string
	p, l    func(c *Card)
	finding func(pinned, live *Card) Finding
	// touches is a task the finding touches; nil only for TouchNone rules.
	touches *Requirements
	// spares is a task the finding does not touch; nil only for TouchAll
	// rules, or with always saying why no task can be spared.
	spares *Requirements
	always string
}{
	{
		rule: RuleSkillRemoved, l: func(c *Card) { c.Skills = c.Skills[:1] },
		touches: &Requirements{SkillID: "translate"}, spares: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleSkillAdded, l: func(c *Card) { c.Skills = append(c.Skills, Skill{ID: "route"}) },
		spares: usesEverything("route"),
	},
	{
		rule: RuleSkillRenamed, l: func(c *Card) { c.Skills[1].ID = "translate-v2" },
		touches: &Requirements{SkillID: "translate"}, spares: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleSkillInputModesChanged, l: func(c *Card) { c.Skills[1].InputModes = []string{"application/pdf"} },
		touches: &Requirements{SkillID: "translate"}, spares: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleSkillOutputModesChanged, l: func(c *Card) { c.Skills[1].OutputModes = []string{"text/plain"} },
		touches: &Requirements{SkillID: "translate"},
		spares:  &Requirements{SkillID: "translate", OutputModes: []string{"text/plain"}},
	},
	{
		rule: RuleDefaultInputModesChanged, l: func(c *Card) { c.DefaultInputModes = c.DefaultInputModes[:1] },
		touches: &Requirements{SkillID: "summarize"}, spares: &Requirements{SkillID: "translate"},
	},
	{
		rule: RuleDefaultOutputModesChanged, l: func(c *Card) { c.DefaultOutputModes = []string{"text/plain"} },
		touches: &Requirements{SkillID: "summarize"},
		spares:  &Requirements{SkillID: "summarize", OutputModes: []string{"text/plain"}},
	},
	{
		rule: RuleStreamingDisabled, l: func(c *Card) { c.Capabilities.Streaming = false },
		touches: &Requirements{Streaming: true}, spares: &Requirements{},
	},
	{
		rule: RuleStreamingEnabled, p: func(c *Card) { c.Capabilities.Streaming = false },
		spares: usesEverything("summarize"),
	},
	{
		rule: RulePushNotificationsDisabled, l: func(c *Card) { c.Capabilities.PushNotifications = false },
		touches: &Requirements{PushNotifications: true}, spares: &Requirements{},
	},
	{
		rule: RulePushNotificationsEnabled, p: func(c *Card) { c.Capabilities.PushNotifications = false },
		spares: usesEverything("summarize"),
	},
	{
		rule: RuleExtendedCardChanged, l: func(c *Card) { c.Capabilities.ExtendedAgentCard = false },
		touches: &Requirements{ExtendedCard: true}, spares: &Requirements{},
	},
	{
		rule: RuleExtensionRemoved, l: func(c *Card) { c.Capabilities.Extensions = nil },
		touches: &Requirements{Extensions: []string{traceURI}}, spares: &Requirements{},
	},
	{
		rule: RuleExtensionAdded,
		l: func(c *Card) {
			c.Capabilities.Extensions = append(c.Capabilities.Extensions, Extension{URI: "urn:x"})
		},
		touches: &Requirements{Extensions: []string{"urn:x"}}, spares: &Requirements{Extensions: []string{traceURI}},
	},
	{
		rule: RuleExtensionRequiredAdded, l: func(c *Card) { c.Capabilities.Extensions[0].Required = true },
		touches: &Requirements{}, spares: &Requirements{Extensions: []string{traceURI}},
	},
	{
		rule: RuleExtensionRequiredRemoved, p: func(c *Card) { c.Capabilities.Extensions[0].Required = true },
		touches: &Requirements{},
		always:  "the pinned card required the extension, so every task planned on it activates it",
	},
	{
		rule: RuleExtensionParamsChanged, l: func(c *Card) { c.Capabilities.Extensions[0].Params = `{}` },
		touches: &Requirements{Extensions: []string{traceURI}}, spares: &Requirements{},
	},
	{
		rule: RuleSecuritySchemeRemoved, l: func(c *Card) { delete(c.SecuritySchemes, "key") },
		touches: &Requirements{Security: []string{"key"}}, spares: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleSecuritySchemeAdded,
		l:    func(c *Card) { c.SecuritySchemes["mtls"] = SecurityScheme{Type: "mutualTLS"} },
		spares: func() *Requirements {
			r := usesEverything("summarize")
			r.Security = append(r.Security, "mtls")
			return r
		}(),
	},
	{
		rule: RuleSecuritySchemeChanged, l: func(c *Card) { c.SecuritySchemes["bearer"] = SecurityScheme{Type: "http", Scheme: "basic"} },
		touches: &Requirements{SkillID: "summarize"}, spares: &Requirements{SkillID: "translate"},
	},
	{
		rule:    RuleOAuthScopeRemoved,
		l:       func(c *Card) { delete(c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes, "read") },
		touches: &Requirements{SkillID: "summarize"}, spares: &Requirements{SkillID: "translate"},
	},
	{
		rule: RuleSecurityRequirementsChanged, l: func(c *Card) { c.SecurityRequirements = c.SecurityRequirements[1:] },
		touches: &Requirements{SkillID: "summarize"}, spares: &Requirements{SkillID: "translate"},
	},
	{
		rule: RuleInterfaceChanged, l: func(c *Card) { c.Interfaces = c.Interfaces[:1] },
		touches: &Requirements{},
	},
	{
		rule: RuleProtocolVersionChanged,
		l: func(c *Card) {
			for i := range c.Interfaces {
				c.Interfaces[i].ProtocolVersion = "0.3"
			}
		},
		touches: &Requirements{},
	},
	{rule: RuleCardVersionChanged, l: func(c *Card) { c.Version = "1.3.0" }, spares: usesEverything("summarize")},
	{
		rule: RuleContentChangedWithoutVersion, l: func(c *Card) { c.Capabilities.Streaming = false },
		spares: usesEverything("summarize"),
	},
	{rule: RuleDescriptiveTextChanged, l: func(c *Card) { c.Name = "Planner" }, spares: usesEverything("summarize")},
	{
		rule: RuleCardNonconformant,
		l: func(c *Card) {
			c.Conformance = []Nonconformance{{Path: "/skills/0/examples/0", Message: "an object where a string belongs"}}
		},
		spares: usesEverything("summarize"),
	},
	{
		rule: RuleSignatureAdded, l: func(c *Card) { c.Signatures = []Signature{testSigA} },
		touches: &Requirements{},
	},
	{
		rule: RuleSignatureRemoved, p: func(c *Card) { c.Signatures = []Signature{testSigA} },
		touches: &Requirements{},
	},
	{
		rule:    RuleSignatureInvalid,
		p:       func(c *Card) { c.Signatures = []Signature{testSigA} },
		l:       func(c *Card) { c.Signatures = []Signature{invalid(testSigA)} },
		touches: &Requirements{},
	},
	{
		rule:    RuleSignerChanged,
		p:       func(c *Card) { c.Signatures = []Signature{testSigA} },
		l:       func(c *Card) { c.Signatures = []Signature{testSigB} },
		touches: &Requirements{},
	},
	{
		rule: RuleSignatureRequired,
		finding: func(_, l *Card) Finding {
			f, _ := CheckSigned(l)
			return f
		},
		touches: &Requirements{},
	},
	{
		rule: RuleUnmodeledSkill,
		finding: func(p, _ *Card) Finding {
			f, _ := CheckInputRequest(p, "route")
			return f
		},
		touches: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleArtifactTypeUndeclared,
		finding: func(p, _ *Card) Finding {
			return CheckArtifact(p, "summarize", "a1", []string{"image/png"})[0]
		},
		touches: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleBlindRetry,
		finding: func(_, _ *Card) Finding {
			f, _ := CheckRetry(Retry{Method: "SendMessage", Attempt: 2, PinnedDigest: "sha256:a", ErrorAt: time.Unix(1, 0)}, "sha256:b")
			return f
		},
		touches: &Requirements{SkillID: "summarize"},
	},
	{
		rule: RuleReplicasDisagree,
		finding: func(_, _ *Card) Finding {
			f, _ := CheckReplicas([]string{"sha256:a", "sha256:b"}, time.Minute)
			return f
		},
		touches: &Requirements{},
	},
	{
		rule: RulePinnedCardUnknown,
		finding: func(_, l *Card) Finding {
			fs, _ := EvaluateUnknown("sha256:a", "sha256:b", l, Requirements{}, FailClosed)
			return fs[0]
		},
		touches: &Requirements{},
	},
}

// usesEverything is a task that needs every part of the card, so that a
// finding that spares it spares every task.
func usesEverything(skill string) *Requirements {
	return &Requirements{
		SkillID: skill, Streaming: true, PushNotifications: true,
		InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"},
		Security: []string{"bearer", "key", "oauth"}, Scopes: map[string][]string{"oauth": {"read", "translate"}},
		Extensions: []string{traceURI, "urn:x"}, ExtendedCard: true, Idempotent: true,
	}
}

// TestRegistryTouches holds every rule to what it declares it touches: each
// rule has a case, a rule that touches no task is TouchNone and one that
// spares none is TouchAll (or says why), and the finding touches the task it
// should and spares the one it should.
func TestRegistryTouches(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range touchCases {
		t.Run(tc.rule, func(t *testing.T) {
			if covered[tc.rule] {
				t.Fatalf("rule %q has two touch cases", tc.rule)
			}
			covered[tc.rule] = true
			r, ok := RuleByID(tc.rule)
			if !ok {
				t.Fatalf("touch case for unregistered rule %q", tc.rule)
			}
			switch {
			case (tc.touches == nil) != (r.Touches == TouchNone):
				t.Errorf("rule %q touches %v, and its case has a task it touches: %v", tc.rule, r.Touches, tc.touches != nil)
			case tc.spares == nil && r.Touches != TouchAll && tc.always == "":
				t.Errorf("rule %q touches %v, and its case has no task it spares nor says why", tc.rule, r.Touches)
			case tc.spares != nil && r.Touches == TouchAll:
				t.Errorf("rule %q touches all tasks, and its case has one it spares", tc.rule)
			}
			pinned, live := modifiedPair(tc.p, tc.l)
			var f Finding
			if tc.finding != nil {
				f = tc.finding(pinned, live)
			} else {
				for _, d := range Diff(pinned, live) {
					if d.Rule == tc.rule {
						f = d
						break
					}
				}
			}
			if f.Rule != tc.rule {
				t.Fatalf("the case's change gives no %s finding", tc.rule)
			}
			if tc.touches != nil && !Touches(f, pinned, live, *tc.touches) {
				t.Errorf("Touches(%s, %+v) = false, want true", tc.rule, *tc.touches)
			}
			if tc.spares != nil && Touches(f, pinned, live, *tc.spares) {
				t.Errorf("Touches(%s, %+v) = true, want false", tc.rule, *tc.spares)
			}
		})
	}
	for _, r := range Rules() {
		if !covered[r.ID] {
			t.Errorf("rule %q (touches %v) has no touch case", r.ID, r.Touches)
		}
	}
}
