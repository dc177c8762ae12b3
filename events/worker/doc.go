// Package worker is the carddrift worker: it consumes task-lifecycle
// CloudEvents from JetStream, joins each with the task's pin, fetches the live
// card on capability-dependent transitions, judges what changed for that task,
// and publishes card.drift, card.pinned, card.observed, card.unreachable and
// card.inconsistent. New builds a Worker, Run consumes until its context
// ends and then drains, Close releases the fetcher.
//
// # Per event
//
// The decisions are the task core's (events/task: which events need a live
// card, how a submission is pinned, what a transition shows, one verdict);
// the worker is its shell. It reads the pin and the pinned body, observes
// the live card through the fetcher (the agent's shared lease, ETag
// revalidation, one fetch per lease across workers, a failure shared like a
// success), verifies a client's card with the keys live cards are verified
// with, and carries out the core's Result: store the body, write the pin
// (compare-and-set at the revision the event was judged on; a conflict is
// handled again on the pin as it now is), publish. Events that need no live
// card are acknowledged at once. A transition of a task with no pin waits
// for its submission (noPinGrace), then is acknowledged as "no-pin".
// card.inconsistent is published once per split-brain episode, by the
// first worker that observes it (reportInconsistent).
//
// # Delivery
//
// Each event is acknowledged only after everything it caused is stored:
// its pin writes are done and its publishes have their PubAcks (ack.go).
// The delivery policy is a chain of wrappers, one concern each (chain, in
// deliver.go): transient failures are retried in process, then NAKed with a
// growing delay; on the MaxDeliver-th delivery the event is dead-lettered
// (the consumer itself redelivers without limit); malformed events, events
// whose subject disagrees with their data and events that can never succeed
// are copied to the dead-letter stream with a reason (DeadLetterReasons)
// and terminated once the copy is stored; writes refused for lack of space
// are held until the store takes them (nospace.go).
//
// Per-task order: the lifecycle stream is partitioned by task id, each
// partition has one durable consumer whose messages one worker receives at
// a time (a pinned priority group). Within a partition the worker handles
// events of different tasks concurrently (Options.Concurrency) and the
// events of one task in stream order (dispatch.go), so that a slow agent
// delays only its own tasks. Redelivery can still bring a task's events out
// of order; the pin records the stream positions the core needs to judge
// them as if they came in order. card.drift is published once per (task,
// pinned digest, live digest, rule ids): its Nats-Msg-Id is deterministic
// (events.MsgID) and the pin records the ids it published.
package worker
