package detector_test

import (
	"fmt"

	"github.com/carddrift/carddrift/detector"
)

// pinnedCard is the card a client planned its tasks against: a v1.0 card
// with streaming and two skills.
const pinnedCard = `{
  "name": "Travel Agent",
  "description": "Books trips.",
  "version": "2.1.0",
  "supportedInterfaces": [{"url": "https://travel.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["application/json"],
  "skills": [
    {"id": "book-flight", "name": "Book a flight", "description": "Books a flight.", "tags": ["travel"]},
    {"id": "find-hotel", "name": "Find a hotel", "description": "Finds hotels.", "tags": ["travel"]}
  ]
}`

// liveCard is what the agent serves now: streaming is off and the
// find-hotel skill is gone, under the same card version.
const liveCard = `{
  "name": "Travel Agent",
  "description": "Books trips.",
  "version": "2.1.0",
  "supportedInterfaces": [{"url": "https://travel.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": false},
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["application/json"],
  "skills": [
    {"id": "book-flight", "name": "Book a flight", "description": "Books a flight.", "tags": ["travel"]}
  ]
}`

func parse(s string) *detector.Card {
	c, err := detector.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return c
}

// Diff lists what changed between two cards, most serious first. It knows
// no task: whether a finding matters is Evaluate's question.
func ExampleDiff() {
	for _, f := range detector.Diff(parse(pinnedCard), parse(liveCard)) {
		fmt.Printf("%-8s %-36s %-26s %s\n", f.Severity, f.Rule, f.Path, f.Message)
	}
	// Output:
	// breaking skill-removed                        /skills/1                  skill "find-hotel" is no longer offered
	// breaking streaming-disabled                   /capabilities/streaming    streaming is no longer supported: streaming calls will not get an event stream
	// warning  content-changed-without-version-bump /version                   card content changed (capabilities, skills) but its version is still "2.1.0"
}

// Evaluate judges the same change for each task: a finding counts only if
// it touches what the task uses, and the task's posture decides the action.
func ExampleEvaluate() {
	pinned, live := parse(pinnedCard), parse(liveCard)
	tasks := []struct {
		name    string
		req     detector.Requirements
		posture detector.Posture
	}{
		{"streams a booking", detector.Requirements{SkillID: "book-flight", Streaming: true}, detector.FailClosed},
		{"streams, idempotent", detector.Requirements{SkillID: "book-flight", Streaming: true, Idempotent: true}, detector.Degrade},
		{"books without streaming", detector.Requirements{SkillID: "book-flight"}, detector.FailClosed},
		{"finds a hotel, idempotent", detector.Requirements{SkillID: "find-hotel", Idempotent: true}, detector.Degrade},
	}
	for _, task := range tasks {
		_, v := detector.Evaluate(pinned, live, task.req, task.posture)
		fmt.Printf("%-26s %-8s %s\n", task.name, v.Action, v.Reason)
	}
	// Output:
	// streams a booking          abort    fail-closed: breaking drift touches this task: streaming-disabled; re-negotiate against the live card
	// streams, idempotent        replan   degrade: task is idempotent and skill "book-flight" is still offered; re-plan against the live card: streaming-disabled
	// books without streaming    continue 3 finding(s), none touches this task
	// finds a hotel, idempotent  abort    degrade: cannot re-plan: skill "find-hotel" is no longer offered: skill-removed
}

// EvaluateUnknown judges a task pinned by a digest alone (the client sent
// the digest of a card carddrift never saw): a different live digest is
// drift, though what changed cannot be listed.
func ExampleEvaluateUnknown() {
	live := parse(liveCard)
	liveDigest, _ := detector.Digest([]byte(liveCard))
	pinnedDigest, _ := detector.Digest([]byte(pinnedCard))
	findings, v := detector.EvaluateUnknown(pinnedDigest, liveDigest, live, detector.Requirements{SkillID: "book-flight"}, detector.FailClosed)
	fmt.Println(findings[0].Rule, v.Action)
	// Output:
	// pinned-card-unknown abort
}

// The rules are data: each has a stable id, the most serious severity it
// can produce, an area and what it touches of a task.
func ExampleRuleByID() {
	for _, id := range []string{detector.RuleStreamingDisabled, detector.RuleSkillRemoved, detector.RuleDescriptiveTextChanged} {
		r, _ := detector.RuleByID(id)
		fmt.Printf("%-26s %-8s %-12s touches %s\n", r.ID, r.Severity, r.Area, r.Touches)
	}
	// Output:
	// streaming-disabled         breaking capabilities touches streaming
	// skill-removed              breaking skills       touches skill
	// descriptive-text-changed   info     text         touches none
}
