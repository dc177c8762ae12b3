package detector

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The pinning write-up: discovery at T0, rotation at T0+40s.
const (
	pinningT0 = `{
  "name": "Vendor B Summarizer", "version": "1.0.0", "protocolVersion": "1.0.0",
  "url": "https://vendor-b.example.com/a2a",
  "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
  "security": [{"bearer": []}],
  "skills": [{"id": "summarize", "name": "Summarize", "description": "Summarizes text", "tags": ["text"]}]
}`
	pinningT40 = `{
  "name": "Vendor B Summarizer", "version": "1.0.0", "protocolVersion": "1.0.0",
  "url": "https://vendor-b.example.com/a2a",
  "capabilities": {"streaming": false},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "securitySchemes": {"oauth2": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://vendor-b.example.com/token", "scopes": {"tasks": "run tasks"}}}}},
  "security": [{"oauth2": ["tasks"]}],
  "skills": [
    {"id": "summarize", "name": "Summarize", "description": "Summarizes text", "tags": ["text"]},
    {"id": "translate", "name": "Translate", "description": "Translates text", "tags": ["text"]}
  ]
}`
	// The fingerprint write-up: a skill's modes mutated without a version bump.
	fingerprintBefore = `{
  "name": "peer-a", "version": "1.0", "url": "https://peer-a.example.com/a2a",
  "capabilities": {"streaming": false},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [
    {"id": "summarize-v2", "name": "Summarize", "description": "d", "tags": [], "inputModes": ["text/plain"], "outputModes": ["text/markdown"]},
    {"id": "classify", "name": "Classify", "description": "d", "tags": [], "inputModes": ["text/plain"], "outputModes": ["application/json"]}
  ]
}`
	fingerprintAfter = `{
  "name": "peer-a", "version": "1.0", "url": "https://peer-a.example.com/a2a",
  "capabilities": {"streaming": false},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [
    {"id": "summarize-v2", "name": "Summarize", "description": "d", "tags": [], "inputModes": ["text/plain"], "outputModes": ["application/json"]},
    {"id": "classify", "name": "Classify", "description": "d", "tags": [], "inputModes": ["text/plain"], "outputModes": ["application/json"]}
  ]
}`
)

func rules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func hasRule(fs []Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

func TestPinningWriteUp(t *testing.T) {
	pinned := mustParse(t, []byte(pinningT0))
	live := mustParse(t, []byte(pinningT40))

	tests := []struct {
		name         string
		req          Requirements
		extra        []Finding
		wantAction   Action
		wantImpacted []string
	}{
		{
			name:         "fail-closed streaming task aborts on streaming-disabled",
			req:          Requirements{SkillID: "summarize", Streaming: true, Posture: FailClosed},
			wantAction:   Abort,
			wantImpacted: []string{RuleStreamingDisabled, RuleSecuritySchemeRemoved},
		},
		{
			name:         "degrade idempotent summarize task re-plans",
			req:          Requirements{SkillID: "summarize", Posture: Degrade, Idempotent: true},
			wantAction:   Replan,
			wantImpacted: []string{RuleSecuritySchemeRemoved},
		},
		{
			name:       "degrade task that is not idempotent aborts",
			req:        Requirements{SkillID: "summarize", Posture: Degrade},
			wantAction: Abort,
		},
		{
			name: "input-required naming translate is an unmodeled skill",
			req:  Requirements{SkillID: "summarize", Posture: FailClosed, Security: []string{"bearer"}},
			extra: func() []Finding {
				f, ok := CheckInputRequest(pinned, "translate")
				if !ok {
					t.Fatalf("CheckInputRequest(translate) found nothing")
				}
				return []Finding{f}
			}(),
			wantAction:   Abort,
			wantImpacted: []string{RuleUnmodeledSkill},
		},
		{
			name: "-32602 then a retry on the stale pin is a blind retry",
			req:  Requirements{SkillID: "summarize", Posture: FailClosed},
			extra: func() []Finding {
				r := Retry{Method: "tasks/send", Attempt: 2, PinnedDigest: "sha256:pinned", ErrorAt: time.Unix(40, 0), ErrorCode: -32602}
				f, ok := CheckRetry(r, "sha256:live")
				if !ok {
					t.Fatalf("CheckRetry found nothing")
				}
				return []Finding{f}
			}(),
			wantAction:   Abort,
			wantImpacted: []string{RuleBlindRetry},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings, v := Evaluate(pinned, live, tt.req, tt.req.Posture, tt.extra...)
			for _, want := range []string{RuleStreamingDisabled, RuleSkillAdded, RuleSecuritySchemeRemoved, RuleSecuritySchemeAdded, RuleContentChangedWithoutVersion} {
				if !hasRule(findings, want) {
					t.Errorf("Evaluate findings = %v, missing %s", rules(findings), want)
				}
			}
			if v.Action != tt.wantAction {
				t.Fatalf("Evaluate(%+v).Action = %s, want %s (reason %q)", tt.req, v.Action, tt.wantAction, v.Reason)
			}
			for _, want := range tt.wantImpacted {
				if !hasRule(v.Impacting, want) {
					t.Errorf("Impacting = %v, missing %s", rules(v.Impacting), want)
				}
			}
			if hasRule(v.Impacting, RuleStreamingDisabled) && !tt.req.Streaming {
				t.Errorf("streaming-disabled impacts a task that does not stream")
			}
			if v.Reason == "" {
				t.Errorf("verdict has no reason")
			}
		})
	}
}

func TestPinningWriteUpChecks(t *testing.T) {
	pinned := mustParse(t, []byte(pinningT0))
	if _, ok := CheckInputRequest(pinned, "summarize"); ok {
		t.Errorf("CheckInputRequest(summarize) flagged a declared skill")
	}
	r := Retry{Method: "tasks/send", Attempt: 2, PinnedDigest: "sha256:a"}
	if _, ok := CheckRetry(r, "sha256:b"); ok {
		t.Errorf("CheckRetry without a schema-class error flagged a retry")
	}
	r.ErrorAt = time.Unix(1, 0)
	first := r
	first.Attempt = 1
	if _, ok := CheckRetry(first, "sha256:b"); ok {
		t.Errorf("CheckRetry flagged a first attempt")
	}
	if _, ok := CheckRetry(r, "sha256:a"); ok {
		t.Errorf("CheckRetry flagged a retry on a pin that matches the live card")
	}
}

func TestFingerprintWriteUp(t *testing.T) {
	pinned := mustParse(t, []byte(fingerprintBefore))
	live := mustParse(t, []byte(fingerprintAfter))
	if pinned.Version != live.Version {
		t.Fatalf("fixture: versions differ")
	}
	if Fingerprint(pinned) == Fingerprint(live) {
		t.Fatalf("Fingerprint unchanged by a modes mutation")
	}
	tests := []struct {
		name       string
		req        Requirements
		wantAction Action
	}{
		{"task on the mutated skill aborts", Requirements{SkillID: "summarize-v2", OutputModes: []string{"text/markdown"}}, Abort},
		{"task on the mutated skill without declared modes aborts", Requirements{SkillID: "summarize-v2"}, Abort},
		{"degrade task on the mutated skill re-plans", Requirements{SkillID: "summarize-v2", Posture: Degrade, Idempotent: true}, Replan},
		{"task on another skill continues", Requirements{SkillID: "classify"}, Continue},
		{"streaming task on another skill continues", Requirements{SkillID: "classify", Streaming: false, OutputModes: []string{"application/json"}}, Continue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings, v := Evaluate(pinned, live, tt.req, tt.req.Posture)
			if !hasRule(findings, RuleSkillOutputModesChanged) || !hasRule(findings, RuleContentChangedWithoutVersion) {
				t.Fatalf("findings = %v, want skill-output-modes-changed and content-changed-without-version-bump", rules(findings))
			}
			if v.Action != tt.wantAction {
				t.Fatalf("Evaluate(%+v).Action = %s, want %s (reason %q, impacting %v)", tt.req, v.Action, tt.wantAction, v.Reason, rules(v.Impacting))
			}
		})
	}
	// The artifact check catches the same mutation from the other side.
	got := CheckArtifact(pinned, "summarize-v2", "a1", []string{"application/json"})
	if len(got) != 1 || got[0].Rule != RuleArtifactTypeUndeclared {
		t.Fatalf("CheckArtifact(application/json) = %v, want one artifact-type-undeclared", got)
	}
	if got := CheckArtifact(pinned, "summarize-v2", "a1", []string{"text/markdown; charset=utf-8"}); len(got) != 0 {
		t.Fatalf("CheckArtifact(declared type with parameter) = %v, want none", got)
	}
}

func TestDescriptionOnlyEditNeverAborts(t *testing.T) {
	pinned := mustParse(t, []byte(pinningT0))
	edited := strings.Replace(pinningT0, `"Summarizes text"`, `"Summarizes any text, now faster"`, 1)
	edited = strings.Replace(edited, `"Vendor B Summarizer"`, `"Vendor B Summariser"`, 1)
	live := mustParse(t, []byte(edited))
	if StructuralDigest(pinned) != StructuralDigest(live) || Fingerprint(pinned) != Fingerprint(live) {
		t.Fatalf("a description edit changed the structural digest or fingerprint")
	}
	reqs := []Requirements{
		{SkillID: "summarize", Streaming: true},
		{SkillID: "summarize", Posture: Degrade, Idempotent: true},
		{SkillID: "summarize", Security: []string{"bearer"}, OutputModes: []string{"text/plain"}},
		{},
	}
	for _, req := range reqs {
		findings, v := Evaluate(pinned, live, req, req.Posture)
		if !hasRule(findings, RuleDescriptiveTextChanged) {
			t.Errorf("findings = %v, want descriptive-text-changed", rules(findings))
		}
		if v.Action != Continue || len(v.Impacting) != 0 {
			t.Errorf("Evaluate(%+v) = %s %v, want continue with nothing impacting", req, v.Action, rules(v.Impacting))
		}
	}
}

// TestTaskRelevance judges one change for tasks that use different parts of
// the card: a finding aborts only the fail-closed tasks it touches.
func TestTaskRelevance(t *testing.T) {
	removeScope := func(scope string) func(c *Card) {
		return func(c *Card) { delete(c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes, scope) }
	}
	addScope := func(scope string) func(c *Card) {
		return func(c *Card) { c.SecuritySchemes["oauth"].Flows["clientCredentials"].Scopes[scope] = "" }
	}
	noExtensions := func(c *Card) { c.Capabilities.Extensions = nil }
	tests := []struct {
		name          string
		pinned, live  func(c *Card) // changes to testCard; nil: none
		req           Requirements
		wantAction    Action
		wantImpacting []string
		noDrift       bool // no finding at all
	}{
		// A withdrawn extended card touches only tasks that use it.
		{
			name:          "extended card withdrawn, task uses it",
			live:          func(c *Card) { c.Capabilities.ExtendedAgentCard = false },
			req:           Requirements{SkillID: "summarize", ExtendedCard: true},
			wantAction:    Abort,
			wantImpacting: []string{RuleExtendedCardChanged},
		},
		{
			name:       "extended card withdrawn, task does not use it",
			live:       func(c *Card) { c.Capabilities.ExtendedAgentCard = false },
			req:        Requirements{SkillID: "summarize"},
			wantAction: Continue,
		},
		// A removed optional extension touches only tasks that activate it.
		{
			name:          "optional extension removed, task activates it",
			live:          noExtensions,
			req:           Requirements{SkillID: "summarize", Extensions: []string{traceURI}},
			wantAction:    Abort,
			wantImpacting: []string{RuleExtensionRemoved},
		},
		{
			name:       "optional extension removed, task activates another",
			live:       noExtensions,
			req:        Requirements{SkillID: "summarize", Extensions: []string{"urn:other"}},
			wantAction: Continue,
		},
		{
			name:       "optional extension removed, task activates none",
			live:       noExtensions,
			req:        Requirements{SkillID: "summarize"},
			wantAction: Continue,
		},
		{
			name:          "required extension removed: every task on the pinned card activated it",
			pinned:        requireTrace,
			live:          noExtensions,
			req:           Requirements{SkillID: "summarize"},
			wantAction:    Abort,
			wantImpacting: []string{RuleExtensionRemoved},
		},
		// A newly required extension refuses the tasks that do not activate it.
		{
			name:          "extension now required, task does not activate it",
			live:          requireTrace,
			req:           Requirements{SkillID: "summarize"},
			wantAction:    Abort,
			wantImpacting: []string{RuleExtensionRequiredAdded},
		},
		{
			name:       "extension now required, task already activates it",
			live:       requireTrace,
			req:        Requirements{SkillID: "summarize", Extensions: []string{traceURI}},
			wantAction: Continue,
		},
		{
			name:          "extension params changed, task activates it",
			live:          func(c *Card) { c.Capabilities.Extensions[0].Params = `{"level":"full"}` },
			req:           Requirements{SkillID: "summarize", Extensions: []string{traceURI}},
			wantAction:    Continue,
			wantImpacting: []string{RuleExtensionParamsChanged},
		},
		{
			name:       "extension params changed, task does not activate it",
			live:       func(c *Card) { c.Capabilities.Extensions[0].Params = `{"level":"full"}` },
			req:        Requirements{SkillID: "summarize"},
			wantAction: Continue,
		},
		// A removed OAuth scope touches only tasks that request it.
		{
			name:          "scope removed, task requests it",
			live:          removeScope("read"),
			req:           Requirements{SkillID: "summarize", Scopes: map[string][]string{"oauth": {"read"}}},
			wantAction:    Abort,
			wantImpacting: []string{RuleOAuthScopeRemoved},
		},
		{
			name:       "scope removed, task requests another scope of the scheme",
			live:       removeScope("read"),
			req:        Requirements{SkillID: "summarize", Scopes: map[string][]string{"oauth": {"translate"}}},
			wantAction: Continue,
		},
		{
			name:       "scope removed, task requests scopes of another scheme only",
			live:       removeScope("read"),
			req:        Requirements{SkillID: "summarize", Scopes: map[string][]string{"other": {"read"}}},
			wantAction: Continue,
		},
		{
			name:       "scope removed, task said it requests no scopes",
			live:       removeScope("read"),
			req:        Requirements{SkillID: "summarize", Scopes: map[string][]string{}},
			wantAction: Continue,
		},
		{
			name:          "scope removed, unsaid: a card requirement of the task's skill lists it",
			live:          removeScope("read"),
			req:           Requirements{SkillID: "summarize"},
			wantAction:    Abort,
			wantImpacting: []string{RuleOAuthScopeRemoved},
		},
		{
			name:       "scope removed, unsaid: the skill's own requirements do not list it",
			live:       removeScope("read"),
			req:        Requirements{SkillID: "translate"},
			wantAction: Continue,
		},
		{
			name:          "scope removed, unsaid: the skill's own requirements list it",
			live:          removeScope("translate"),
			req:           Requirements{SkillID: "translate"},
			wantAction:    Abort,
			wantImpacting: []string{RuleOAuthScopeRemoved},
		},
		{
			name:       "scope removed, unsaid: task authenticates with another scheme",
			live:       removeScope("read"),
			req:        Requirements{SkillID: "summarize", Security: []string{"bearer"}},
			wantAction: Continue,
		},
		{
			name:       "scope no requirement uses removed, unsaid",
			pinned:     addScope("admin"),
			req:        Requirements{SkillID: "summarize"},
			wantAction: Continue,
		},
		{
			name:       "scope no requirement uses removed, unsaid, task of a skill with its own requirements",
			pinned:     addScope("admin"),
			req:        Requirements{SkillID: "translate"},
			wantAction: Continue,
		},
		{
			name:          "scope no requirement uses removed, task requests it",
			pinned:        addScope("admin"),
			req:           Requirements{SkillID: "summarize", Scopes: map[string][]string{"oauth": {"admin"}}},
			wantAction:    Abort,
			wantImpacting: []string{RuleOAuthScopeRemoved},
		},
		// Spellings of one interface URL are no move.
		{
			name:       "interface host case and explicit :443",
			pinned:     func(c *Card) { c.Interfaces[0].URL = "https://planner.example.com" },
			live:       func(c *Card) { c.Interfaces[0].URL = "https://Planner.Example.com:443/" },
			req:        Requirements{SkillID: "summarize"},
			wantAction: Continue,
			noDrift:    true,
		},
		{
			name:          "interface moved to another host",
			live:          func(c *Card) { c.Interfaces[0].URL = "https://planner.example.net/a2a" },
			req:           Requirements{SkillID: "summarize"},
			wantAction:    Abort,
			wantImpacting: []string{RuleInterfaceChanged},
		},
		// A skill that drops its own requirements inherits the card's.
		{
			name:          "skill requirements dropped, card ones do not admit the task",
			live:          func(c *Card) { c.Skills[1].SecurityRequirements = nil },
			req:           Requirements{SkillID: "translate"},
			wantAction:    Abort,
			wantImpacting: []string{RuleSecurityRequirementsChanged},
		},
		{
			name:       "skill requirements dropped, task of another skill",
			live:       func(c *Card) { c.Skills[1].SecurityRequirements = nil },
			req:        Requirements{SkillID: "summarize"},
			wantAction: Continue,
		},
		{
			name: "skill requirements dropped, card ones admit the task",
			pinned: func(c *Card) {
				c.SecurityRequirements = append(c.SecurityRequirements, SecurityRequirement{"oauth": {"translate"}})
			},
			live: func(c *Card) {
				c.SecurityRequirements = append(c.SecurityRequirements, SecurityRequirement{"oauth": {"translate"}})
				c.Skills[1].SecurityRequirements = nil
			},
			req:        Requirements{SkillID: "translate"},
			wantAction: Continue,
		},
		{
			name: "card requirements tightened while the skill drops its own for them",
			live: func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"oauth": {"translate"}}}
				c.Skills[1].SecurityRequirements = nil
			},
			req:        Requirements{SkillID: "translate"},
			wantAction: Continue,
		},
		{
			name: "card requirements tightened, task of a skill that inherits them",
			live: func(c *Card) {
				c.SecurityRequirements = []SecurityRequirement{{"oauth": {"translate"}}}
				c.Skills[1].SecurityRequirements = nil
			},
			req:           Requirements{SkillID: "summarize"},
			wantAction:    Abort,
			wantImpacting: []string{RuleSecurityRequirementsChanged},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinned, live := modifiedPair(tt.pinned, tt.live)
			findings, v := Evaluate(pinned, live, tt.req, FailClosed)
			if v.Action != tt.wantAction {
				t.Errorf("Evaluate(%+v).Action = %s, want %s (reason %q)\n%s", tt.req, v.Action, tt.wantAction, v.Reason, dump(findings))
			}
			if got := rules(v.Impacting); !slices.Equal(got, tt.wantImpacting) {
				t.Errorf("Evaluate(%+v).Impacting = %v, want %v\n%s", tt.req, got, tt.wantImpacting, dump(findings))
			}
			for _, f := range findings {
				if want := Touches(f, pinned, live, tt.req); f.Touches != want {
					t.Errorf("%s finding has Touches %v, Touches() = %v", f.Rule, f.Touches, want)
				}
				if f.Severity >= Warning && f.Touches != hasRule(v.Impacting, f.Rule) {
					t.Errorf("%s finding has Touches %v but is impacting %v", f.Rule, f.Touches, hasRule(v.Impacting, f.Rule))
				}
			}
			if tt.noDrift && len(findings) != 0 {
				t.Errorf("Evaluate(%+v) findings =\n%s\nwant none", tt.req, dump(findings))
			}
			if got := Judge(findings, pinned, live, tt.req, FailClosed); got.Action != v.Action {
				t.Errorf("Judge(findings).Action = %s, Evaluate's %s", got.Action, v.Action)
			}
		})
	}
}

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

func TestCountsAdd(t *testing.T) {
	var c Counts
	for _, a := range []Action{Abort, Replan, Replan, Continue, "", "maybe"} {
		c.Add(a)
	}
	if want := (Counts{Abort: 1, Replan: 2, Continue: 1}); c != want {
		t.Errorf("Counts after abort, replan×2, continue and two unknown actions = %+v, want %+v", c, want)
	}
}
