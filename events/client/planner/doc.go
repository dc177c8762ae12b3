// Package planner is the library a planner service uses to act on carddrift:
// it receives card.drift verdicts as typed values, and checks before it
// submits whether an agent's live card still satisfies a task.
//
// # Acting on verdicts
//
// Subscribe delivers card.drift through a durable pull consumer the planner
// names, filtered by agent, action and minimum severity of the findings that
// touch the task, and acknowledges each verdict once the handler returns nil
// (see Subscribe for the exact acknowledgement rules):
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
// The Subscription is a handle like jetstream's ConsumeContext: Stop ends it
// at once, Drain after the buffered verdicts, Closed tells when it has
// ended. Everything runs on goroutines the Subscription owns.
//
// # Checking before submitting
//
// A Checker reads the live card through the same fetcher, shared leases and
// card store as the workers (so a check inside a fresh lease costs no
// request) and answers with a Decision: what of the task's requirements the
// card does not satisfy (Unmet: skill not offered, streaming or push not
// declared, input/output modes not covered, security schemes missing), and,
// given the card the planner planned against, the findings and verdict
// exactly as a worker would judge them:
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
// An unreachable card is an error (*UnreachableError, matching
// ErrUnreachable), never a satisfied Decision.
//
// # Authenticated extended cards
//
// A task that uses the agent's authenticated extended card
// (Requirements.ExtendedCard) is checked against the extended card, asked
// for exactly as a worker asks for it, with the credentials the Checker is
// given for the agent's origin — the type carddrift serve
// --agent-credentials reads:
//
//	creds, err := fetcher.OpenCredentials(path, fetcher.CredentialsFileOptions{})
//	...
//	chk, err := planner.NewChecker(planner.CheckerOptions{Fetch: fetcher.Options{
//		Leases: stores.Leases, Cards: stores.Cards, Credentials: creds,
//	}})
//
// Decision.Extended says which card answered. Without a credential for the
// agent (events.ExtendedUnavailable) the public card answers and, as a
// worker pins such a task again on the public card, a pinned extended card
// is not judged against it: no drift. A refused credential is an
// *UnreachableError (fetcher.ReasonUnauthorized, ReasonForbidden,
// ReasonRPCError). No Decision and no error ever carries a credential.
//
// The reference planner, cmd/carddrift-planner, puts both together: it
// aborts or re-plans tasks as verdicts arrive.
package planner
