// Package replay reconstructs what happened to tasks and agents from the
// history carddrift keeps in JetStream: the lifecycle stream (a2a.task.*),
// the card events stream (card.*) and the recorded card bodies
// (store.Cards). `carddrift replay` is its command line.
//
// A Reader reads with ordered consumers only (ephemeral, unacknowledged,
// filtered by subject), never a durable one, so replaying a live deployment
// does not disturb its workers, and every read stops at the last sequence
// the stream had when it began. A query reads what it needs: a task its
// subjects and its agents' observations; an agent its card event subjects,
// whose task tokens name its tasks, then those tasks' lifecycle subjects; a
// window (Since, Until) both streams from its start (less ClockSkew) to its
// end (plus Latency, FetchLatency), and the card events from LookBack
// before it for the state it opens in; everything both streams whole.
//
//	r, err := replay.New(js, replay.Options{Cards: stores.Cards})
//	tl, err := r.Timeline(ctx, replay.Query{TaskID: "task-42"})
//	for _, s := range tl.Stories {
//		// the card s.TaskID was planned against (s.Planned), the card live
//		// when it failed (s.Live) and what changed (s.Change.Findings)
//	}
//
// Timeline holds the whole answer; Stream hands over each entry and each
// task's story as it reads, merging a window's or the whole history's two
// streams by stored time through a reorder buffer of the last FetchLatency.
// A task's story is handed over once it reached a terminal state and the
// workers are past it (a card event answers a later lifecycle event of its
// partition), so memory follows the tasks open at once, not the history.
// An entry that comes after its task's story is counted in Summary.Late.
//
// An Entry whose event shows a new card version (a verdict's live card
// against its pin, a pin replacing another, an observation differing from
// the agent's previous one) holds in Change the findings of detector.Diff
// over the two recorded bodies. Replay never fetches a card: a body
// carddrift never stored is reported in Change.Missing. Entries are ordered
// by event time, stored time, stream (lifecycle first) and sequence.
//
// Reader.Cards lists every card version of an agent with its changelog.
// Reader.Reevaluate judges every recorded card.drift again on the recorded
// bodies under another posture or rule set (task-level findings are taken
// from the recorded verdict) and reports the verdicts whose action would
// differ. A transition that produced no card.drift saw no finding at all,
// which no posture or rule set turns into another verdict.
//
// To replay a store directory offline, open a copy of it with an embedded
// server (the server rewrites index files and applies retention as it opens
// a store); `carddrift replay --data-dir` copies only the message blocks
// within the stored-time ranges Ranges returns, and the card bodies.
package replay
