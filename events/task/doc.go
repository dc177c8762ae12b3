// Package task is carddrift's decision core for one task, in the manner of
// etcd-io/raft: the state of a task (its Pin: what it was planned against,
// and the bookkeeping that keeps verdicts independent of delivery order and
// published once) and the decisions about it, with no I/O. The worker, the
// planner's checks and the re-evaluation of history are shells around it.
//
// A shell drives it like this, for each lifecycle event:
//
//   - NeedsCard(ev) false: acknowledge, nothing else (the fast path).
//   - a2a.task.submitted: Submit makes the pin. A client card is pinned at
//     once (Pinned). Otherwise the shell observes the live card, asks
//     Recheck whether that observation is too old and observes again
//     unconditionally if so, loads the body NeedsBody names, and calls
//     Observed with the observation or the failure.
//   - any other event: the shell reads the task's Pin and the pinned body,
//     Begin records what the event says and returns nil when it needs no
//     live card; Force says whether the observation must be unconditional
//     (evidence of drift). The shell observes, asks Recheck (an observation
//     whose content was verified before the task was pinned cannot
//     contradict the pin), and ends with Judge or Fail.
//
// Each returns a Result: the card body to store, the pin to write (before
// publishing for submissions, after for transitions) and the events to
// publish (card.pinned, card.drift, card.unreachable), and the outcome.
//
// One verdict: Decide decides a task's findings and verdict from its pin,
// the pinned body, the live observation, the task-level findings and the
// shell's Policy (posture for signed fleets, a posture that replaces the
// task's own, the rule set: detector.RuleSet). The worker (through Judge and
// Observed), carddrift impact (Assess), replay --reevaluate and the
// planner's Checker all call it, so that they cannot judge one history two
// ways (test/verdict_differential_test.go holds them to it). What the core
// adds to the detector's rules is which findings the task's own events show,
// when a fetch is needed and how, and what is published once.
//
// Signed cards: verifying a signature takes keys, and keys take I/O, so the
// shell verifies (the fetcher, once per body) and hands the results in:
// Observation.Signatures for a live card, Submission.ClientSignatures for
// the client's card. The pin records them (Pin.Signatures; card.pinned and
// card.drift carry the signer), and since signatures never change a digest,
// a live card with the pinned digest is still compared when either is
// signed. Policy.RequireSigned is the posture for signed fleets.
//
// Everything here is deterministic: the shell passes the clock in Meta.
package task
