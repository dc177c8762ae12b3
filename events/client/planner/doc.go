// Package planner is the library a planner service uses to act on carddrift:
// it receives card.drift verdicts as typed values, and checks before it
// submits whether an agent's live card still satisfies a task.
//
// # Acting on verdicts
//
// Subscribe delivers card.drift through a durable pull consumer the planner
// names, filtered by agent, action and minimum severity, and acknowledges
// each verdict once the handler returns nil:
//
//	sub, err := planner.Subscribe(ctx, js, planner.Options{
//		Durable: "billing-planner",
//		Actions: []detector.Action{detector.Abort, detector.Replan},
//	}, func(ctx context.Context, v planner.Verdict) error {
//		switch v.Action {
//		case detector.Abort:
//			return cancelTask(ctx, v.TaskID, v.Reason)
//		case detector.Replan:
//			return replan(ctx, v.TaskID)
//		}
//		return nil
//	})
//	...
//	defer func() { sub.Drain(); <-sub.Closed() }()
//
// # Checking before submitting
//
// A Checker reads the live card as the workers do and answers with a
// Decision: the unmet requirements and, given the planned-against card,
// the verdict a worker would reach:
//
//	chk, err := planner.NewChecker(planner.CheckerOptions{Fetch: fetcher.Options{
//		Leases: stores.Leases, Cards: stores.Cards,
//	}})
//	...
//	d, err := chk.Check(ctx, req, agentURL, planner.WithPinned(plannedCard))
//	var ue *planner.UnreachableError
//	switch {
//	case errors.As(err, &ue):
//		// the card cannot be read (ue.Reason): do not submit blindly
//	case err != nil:
//		// a bad pinned card or a store failure
//	case !d.OK():
//		// d.Unmet, d.Verdict say what changed: re-plan against d.Card
//	}
//
// A task on the extended card is checked against it with the credentials
// of CheckerOptions.Fetch; Decision.Extended says which card answered.
// cmd/carddrift-planner is the reference planner built on both.
package planner
