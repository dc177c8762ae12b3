// Package worker is the carddrift worker: it consumes task-lifecycle
// CloudEvents from JetStream, joins each with the task's pin, fetches the live
// card on capability-dependent transitions, judges what changed for that task,
// and publishes card.drift, card.pinned, card.observed, card.unreachable and
// card.inconsistent.
//
// # Per event
//
//   - a2a.task.submitted pins the task: the client-supplied card
//     (source client-card), else the client's digest checked against a fetch
//     (client-digest), else the first fetch (first-fetch). A new submission of
//     the same task replaces its pin (the client re-planned). When the first
//     fetch fails the task gets a pending pin (no digest) and card.unreachable;
//     the next capability-dependent transition completes the pin. A client
//     digest of a card whose body carddrift never saw makes a pin without a
//     fingerprint (its card.pinned has none); whenever the live card has
//     another digest (at the submission's own fetch, or at a later
//     capability-dependent transition when that fetch failed) the task gets
//     one card.drift with the finding pinned-card-unknown
//     (detector.EvaluateUnknown): fail-closed aborts, degrade re-plans an
//     idempotent task whose skill the live card still offers.
//   - a2a.task.request on a streaming, resubscribe, push-config or
//     extended-card method, on a method carddrift does not know, or any retry
//     (attempt > 1) fetches the live card and evaluates. A retry after a
//     schema-class error on a pin that no longer matches the live card is a
//     blind-retry finding.
//   - a2a.task.status input-required, auth-required and unmodeled states fetch
//     and evaluate; an input request naming a skill the pinned card never
//     declared is an unmodeled-skill finding and forces an unconditional fetch.
//   - a2a.task.artifact checks the media types against the pinned skill's
//     output modes (artifact-type-undeclared forces an unconditional fetch),
//     then fetches and evaluates.
//   - a2a.task.error in the schema class (-32602, -32601, -32003, -32004,
//     -32005, -32007, -32008, -32009) is recorded in the pin and forces an
//     unconditional fetch and evaluation before any retry is judged.
//   - terminal states, working, submitted and first attempts of plain
//     send/get/cancel need no fetch: they are acknowledged at once.
//
// Signed cards: the fetcher verifies a live card's signatures once per body
// (Fetch.Signatures says with which keys) and the worker verifies a client's
// card with the same keys; the pin records who signed the pinned card
// (card.pinned and card.drift carry the signer), and the task core reports
// signature-added, signature-removed, signature-invalid and signer-changed.
// With RequireSignedCards a live card none of whose signatures verifies
// with a key trusted for its agent (--jwks, --trust; never a key only the
// signature's own jku names) is a breaking signature-required finding for
// every task that observes it.
//
// Split brain: every fetch (200 or 304), by any worker, puts the live
// digest in the agent's lease window (detector.Replicas, over the fetcher's
// ConsistencyWindow). When the live card alternates between cards within it
// (A→B→A→B: replicas behind one URL serve different cards at once), the
// first worker to observe the episode publishes card.inconsistent with the
// digests and their counts, once per episode (its Nats-Msg-Id is the card
// URL and the episode's start, and the lease records it was published), and
// while the episode lasts every card.drift of a task on the agent carries a
// replicas-disagree finding (a warning: it names the cause, the verdict is
// the cards'). A rolling deploy (A→B, never back) and a single change and
// its revert are not split brain.
//
// A transition for a task that has no pin waits for its submission: it is
// NAKed and redelivered for a grace period (twice AckWait plus PinnedTTL after
// it was stored, long enough for a submission held by a worker that died to be
// redelivered), then acknowledged without a fetch and counted with outcome
// "no-pin": carddrift cannot say what a task was planned against if it never
// saw the plan (its submission predates carddrift, or the pin expired).
//
// # Delivery
//
// Each event is acknowledged only after every event it caused is published.
// Transient failures (store or publish errors) are retried in process a few
// times, then the event is NAKed with a growing delay; on its MaxDeliver-th
// delivery (store.Config.MaxDeliver, counted by the worker: the consumer
// itself redelivers without limit) it is dead-lettered instead, and on any
// later delivery (the dead letter failed, or handling it ended the process)
// it is dead-lettered without being handled again. Malformed
// events, events whose subject disagrees with their data (subject-mismatch:
// another kind than their type, another task than their taskId; they change
// no pin) and events that can never succeed (an unparseable client card)
// are copied to the dead-letter stream with the reason (DeadLetterReasons)
// and terminated: they never block the stream. An event is terminated only
// once its dead letter is stored; until then it stays unacknowledged and is
// redelivered with a growing delay, so that no dead-letter outage loses it.
// The copy carries the publisher's headers, except that those the server
// would act on (every Nats- header: Nats-Expected-*, Nats-Msg-Id, Nats-TTL,
// Nats-Rollup, …) or that look like carddrift's own are renamed under
// PublisherHeaderPrefix: no publisher decides whether, where or for how
// long its dead letter is kept.
//
// A pin is written back with compare-and-set at the revision the event was
// judged on. A conflict (another writer, across a partition hand-over) is
// not success: the event is handled again on the pin as it now is, a few
// times in process, then by redelivery.
//
// Per-task order: the lifecycle stream is partitioned by task id
// (store.Config.Partitions), each partition has one durable consumer whose
// messages one worker receives at a time (a pinned priority group). Within a
// partition the worker handles events of different tasks concurrently
// (Options.Concurrency tasks at once) and the events of one task strictly in
// stream order, each acknowledged on its own, so that a slow agent delays
// only its own tasks; events that need no live card are acknowledged at once.
// A failed fetch is recorded on the agent's shared lease and reported to
// every worker until its backoff ends (one fetch per backoff, not one per
// transition). The decisions are the task core's (events/task). Redelivery
// can still bring a task's events out of order (JetStream redelivers by ack
// deadline, not by sequence), so verdicts never depend on arrival order: the
// pin records the stream positions of the task's submission, schema-class
// error and latest retry, an older submission never replaces a newer pin, and
// a retry handled before the error that precedes it in the stream is judged
// when the error arrives. A test delivers the pinning write-up's lifecycle in
// all 120 orders and gets the same verdicts.
//
// card.drift is published once per (task, pinned digest, live digest, rule
// ids): its Nats-Msg-Id is deterministic (events.MsgID) and the pin records
// the ids it published, so redeliveries, restarts and later transitions on
// the same cards do not repeat it, even after the stream's duplicate window.
package worker
