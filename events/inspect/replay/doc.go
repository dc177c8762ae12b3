// Package replay reconstructs what happened to tasks and agents from the
// history carddrift keeps in JetStream: the lifecycle stream (a2a.task.*),
// the card events stream (card.*) and the recorded card bodies
// (store.Cards). `carddrift replay` is its command line.
//
// A Reader reads with ordered consumers only, never a durable one, so
// replaying a live deployment does not disturb its workers, and every read
// stops at the last sequence the stream had when it began. A query reads
// what it needs: a task its subjects; an agent its card event subjects,
// whose task tokens name its tasks, then those tasks' lifecycle subjects; a
// window (Since, Until) both streams from its start to its end, and the
// card events from LookBack before it for the state it opens in.
//
//	r, err := replay.New(js, replay.Options{Cards: stores.Cards})
//	tl, err := r.Timeline(ctx, replay.Query{TaskID: "task-42"})
//	for _, s := range tl.Stories {
//		// the card s.TaskID was planned against (s.Planned), the card live
//		// when it failed (s.Live) and what changed (s.Change.Findings)
//	}
//
// Timeline holds the whole answer; Stream hands over each entry and each
// task's story as it reads, so memory follows the tasks open at once, not
// the history. An Entry that shows a new card version holds in Change the
// findings of detector.Diff over the two recorded bodies; replay never
// fetches a card (a body never stored is reported in Change.Missing).
//
// Reader.Cards lists every card version of an agent with its changelog;
// Reader.Reevaluate judges every recorded card.drift again under another
// posture or rule set and reports the verdicts that would differ.
package replay
