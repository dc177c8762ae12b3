package detector

import (
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
				pin := Pin{Digest: "sha256:pinned", SchemaErrorAt: time.Unix(40, 0), SchemaErrorCode: -32602}
				f, ok := CheckRetry(pin, "tasks/send", 2, "sha256:live")
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
	pin := Pin{Digest: "sha256:a"}
	if _, ok := CheckRetry(pin, "tasks/send", 2, "sha256:b"); ok {
		t.Errorf("CheckRetry without a schema-class error flagged a retry")
	}
	pin.SchemaErrorAt = time.Unix(1, 0)
	if _, ok := CheckRetry(pin, "tasks/send", 1, "sha256:b"); ok {
		t.Errorf("CheckRetry flagged a first attempt")
	}
	if _, ok := CheckRetry(pin, "tasks/send", 2, "sha256:a"); ok {
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
