// Package detector is carddrift's judgement, and nothing else: agent cards
// in, findings and verdicts out. It is pure — no network, no NATS, no clock
// of its own — so that the worker, replay's re-evaluation, the planner's
// pre-dispatch check and `carddrift diff` all reach the same answer from the
// same inputs. Fetching cards is package store/fetcher's; strict JSON and
// its canonical form are package detector/jcs's.
//
// # From bytes to a verdict
//
// Parse reads a card as served, of any A2A generation (v0.1 to v1.0, hybrids,
// the forms the SDKs serve), into a Card normalised onto the v1.0 shape. Any
// JSON object is a card: what follows no known schema is read around and
// listed in Card.Conformance; Parse refuses only bytes that are not a JSON
// object, with the sentinels of package jcs (ErrNotJSON, ErrDuplicateKey, …).
// Digest names the card as served (SHA-256 of its RFC 8785 form, signatures
// left out); Fingerprint and StructuralDigest name what a planner negotiates
// against and what can break a task.
//
// Diff compares the card a task was planned against (pinned) with the card
// the agent serves now (live) and returns every Finding, sorted, most
// serious first: a rule id, a severity, a JSON pointer into the card, the
// values before and after, and a message. Diff knows no task.
//
// Evaluate is Diff for one task: given the task's Requirements (its skill,
// streaming, push, modes, security schemes and scopes, extensions) and its
// Posture, it marks which findings touch the task (Finding.Touches) and
// judges them into a Verdict — continue, replan or abort, with the reason
// and the impacting findings:
//
//	pinned, _ := detector.Parse(pinnedRaw)
//	live, _ := detector.Parse(liveRaw)
//	findings, verdict := detector.Evaluate(pinned, live,
//		detector.Requirements{SkillID: "book-flight", Streaming: true}, detector.FailClosed)
//
// EvaluateUnknown is the same decision for a task pinned by a digest whose
// card carddrift never saw: a different live digest is a
// pinned-card-unknown finding. Assess and Judge are the last steps of
// Evaluate, for callers that change the findings first (replay's
// re-evaluation under another rule set). The task-level checks
// (CheckInputRequest, CheckArtifact, CheckRetry, CheckSigned,
// CheckReplicas) turn what a task's lifecycle shows into findings that
// Evaluate judges with the card's.
//
// # Rules are data
//
// Every rule is one Rule in a registry (Rules, RuleByID): a stable
// kebab-case id (part of the public contract: card.drift findings carry
// it), the most serious severity it produces, an area, the pure Check that
// compares two cards (one check_*.go file and its test per rule; nil for
// task-level rules), and Touches: what of a task the rule's findings can
// concern (a Touch: its skill, streaming, a scheme, a scope, …). The one
// function Touches applies that declaration; Judge weighs only the findings
// that touch the task. Messages live apart from the checks (messages.go).
// The registry audit (rules_audit_test.go) checks the registry itself:
// unique ids, the ids and the rule catalogue of schemas/README.md, a mirror
// for every added/removed pair or a written waiver, a message and a firing
// case for every rule, and per rule a task its Touch concerns and one it spares.
//
// To add a rule: a Rule* id, a check_<rule>.go and its test, a registry
// entry with its Touch, a message; the audit fails until all of them exist.
//
// All functions are safe for concurrent use; a Card is read-only after
// Parse.
package detector
