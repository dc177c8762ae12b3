// Package replay reconstructs what happened to tasks and agents from the
// history carddrift keeps in JetStream: the lifecycle stream (a2a.task.*,
// published by A2A clients), the card events stream (card.*, published by
// the workers) and the content-addressed card bodies (store.Cards). It is the
// forensic side of carddrift; `carddrift replay` is its command line.
//
// # Reading history
//
// A Reader reads with ordered consumers only (jetstream.OrderedConsumer:
// ephemeral, no acknowledgements, filtered by subject, starting at the
// beginning or at a time), never with a durable consumer, so replaying a live
// deployment does not disturb its workers. Every read is bounded: it stops at
// the last sequence the stream had when the read began, so a replay of a busy
// stream ends instead of tailing it.
//
// A query reads what it needs, and Timeline.Read (Summary.Read) says how
// many messages that was:
//
//   - a task: its lifecycle subjects (a2a.task.*.<task>), its card events
//     (card.*.*.<task>), then its agents' agent-level card events
//     (observations) up to the query's end;
//   - an agent: its card event subjects (card.*.<agentKey> and
//     card.*.<agentKey>.*, from LookBack before a window), whose task tokens
//     name every task a worker saw on the agent, then those tasks' lifecycle
//     subjects, a consumer per task (a multi-filter consumer per 64 tasks
//     beyond 64). A task no worker ever saw (no card event names it) is not
//     found this way;
//   - a window (Since, Until): both streams from Since less ClockSkew (the
//     server seeks by stored time) to Until plus Latency (FetchLatency for
//     the card events: an observation's time is its fetch's), and the card
//     events stream from LookBack before it for the state the window opens
//     in: each agent's last observed card and the pins of the tasks it
//     continues, which its changes and stories start from;
//   - everything: both streams whole.
//
// For example:
//
//	r, err := replay.New(js, replay.Options{Cards: stores.Cards})
//	...
//	tl, err := r.Timeline(ctx, replay.Query{TaskID: "task-42"})
//	for _, e := range tl.Entries {
//		fmt.Println(e.Time, e.Kind, e.Type, e.Digests.Pinned, e.Digests.Live)
//	}
//	for _, s := range tl.Stories() {
//		// which card s.TaskID was planned against (s.Planned), which card was
//		// live when it failed (s.Live) and what changed (s.Change.Findings)
//	}
//
// Timeline holds the whole answer. Stream hands over each entry and each
// task's story as it reads, for answers of any size: a window or the whole
// history is read from both streams at once, merged by stored time through
// a reorder buffer of the last FetchLatency, and each task's story is handed
// over once the task reached a terminal state and the workers are past it
// (a card event answers a later lifecycle event of its partition, and
// 15 s more went by), so memory follows the tasks open at once (those the
// workers have not answered yet included) and the event rate, not the
// history. An entry of a task that comes after its story (up to 5 minutes
// after) is handed over as an entry, counted in Summary.Late, and gives the
// task no second story.
// StreamWriter writes a stream as text or JSON lines; Capped keeps
// the first entries of a stream for a page.
//
// A Query selects a task (TaskID), an agent (AgentURL: any URL of the agent
// host), a window of time (Since, Until; ParseTime reads RFC 3339 or "15m"
// meaning fifteen minutes ago), or a combination. A task's timeline holds its
// lifecycle events, its pins and verdicts, and the observations of its
// agent's card from the last one before the task began to the task's last
// event: the cards that were live while it ran.
//
// # Entries and changes
//
// Each Entry is one event with its time, Kind (lifecycle, pin, observation,
// verdict, unreachable), CloudEvents type, task, agent, the digests it names
// and its data. Where an entry shows a new card version — a verdict's live
// card against its pin, a pin that replaces an earlier one, an observation
// that differs from the previous observation of the agent — its Change holds
// the findings of detector.Diff over the two recorded bodies from the Cards
// store. Replay never fetches a card: a body carddrift never stored is
// reported in Change.Missing, not guessed.
//
// Entries are ordered by their event time (for an observation, when the card
// was fetched), then by the time the stream stored them, the stream
// (lifecycle first) and the stream sequence: the same history always gives
// the same timeline.
//
// # Card history
//
// Reader.Cards lists every digest an agent was seen with (card.observed,
// card.pinned, card.drift), first and last seen, in order of first sight,
// with the changelog between consecutive versions.
//
// # Re-evaluation
//
// Reader.Reevaluate runs the detector again over every recorded card.drift
// of a query, on the recorded bodies, under another posture (overriding each
// task's) and an optional rule set (Rules: disabled rules and severity
// overrides, applied to the findings before detector.Judge), and reports every
// verdict whose action would differ from the one emitted. The task's
// requirements come from its recorded a2a.task.submitted; task-level findings
// (unmodeled-skill, artifact-type-undeclared, blind-retry) are taken from the
// recorded verdict, since no card diff can reproduce them. The report is
// deterministic: the same history, posture and rules give the same report.
//
// Capability-dependent transitions that produced no card.drift are not
// re-evaluated: the worker publishes a card.drift whenever the live card
// differs from the pin or a task-level finding exists, and once per
// (pin, live card, rule ids), so a transition without one either saw no
// finding at all — which no posture or rule set can turn into another
// verdict — or repeated a verdict that is re-evaluated where it was recorded.
//
// # Offline stores
//
// The Reader reads whatever jetstream.JetStream it is given. To replay a
// store directory offline, open a copy of it with an embedded server (the
// server rewrites index files and applies retention limits as it opens a
// store, so never point it at the original); `carddrift replay --data-dir`
// copies only what the query reads: the message blocks of the two streams
// that can hold the stored times Ranges returns, the card bodies, and the
// other buckets' configuration. A copy opened after the streams' MaxAge has
// passed loses the expired history as the server opens it.
package replay
