// Package detector is carddrift's judgement: agent cards in, findings and
// verdicts out. It is pure (no network, no NATS, no clock of its own), so the
// worker, replay's re-evaluation, the planner and `carddrift diff` reach the
// same answer from the same inputs.
//
// Parse reads a card of any A2A generation into a Card normalised onto the
// v1.0 shape; what follows no known schema is read around and listed in
// Card.Conformance. Digest names the card as served; Fingerprint and
// StructuralDigest name what a planner negotiates against and what can break
// a task. Diff compares the pinned card with the live one into sorted
// findings; Evaluate does it for one task and judges them into a Verdict:
//
//	pinned, _ := detector.Parse(pinnedRaw)
//	live, _ := detector.Parse(liveRaw)
//	findings, verdict := detector.Evaluate(pinned, live,
//		detector.Requirements{SkillID: "book-flight", Streaming: true}, detector.FailClosed)
//
// Every rule is one Rule in a registry (Rules, RuleByID): a stable id, its
// most serious severity, an area, the Check that compares two cards (in the
// check_*.go file of its area; nil for task-level rules) and the Touch that says
// which tasks its findings concern. The registry audit (rules_audit_test.go)
// fails until a new rule has its id, check, test, Touch and message.
//
// All functions are safe for concurrent use; a Card is read-only after Parse.
package detector
