// Package a2aemit connects an a2a-go client (github.com/a2aproject/a2a-go
// v0.3) to carddrift: an a2aclient.CallInterceptor that publishes the task
// lifecycle events carddrift workers judge through a client.Emitter, added
// with one option (package a2aemitv2 is the same for a2a-go/v2, A2A v1.0):
//
//	em, _ := client.NewEmitter(js, "urn:client:billing")
//	f, _ := fetcher.New(fetcher.Options{}) // Allow: what the SSRF guard may reach
//	card, _ := a2aemit.ResolveCard(ctx, f, agentURL)
//	client, _ := a2aclient.NewFromCard(ctx, card.AgentCard,
//		a2aemit.WithLifecycleEvents(em, a2aemit.Options{RawCard: card.Raw, CardURL: card.URL}))
//	...
//	ctx = a2aemit.WithPlan(ctx, a2aemit.Plan{SkillID: "summarize", Posture: detector.Degrade, Idempotent: true})
//	for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: msg}) { ... }
//
// # What is emitted
//
//   - a2a.task.submitted once per task the client creates through the
//     interceptor, when the first response names it: the card (below), the
//     Plan (WithPlan, else Options.Plan), and what the call shows: streaming
//     when it streams (not when the client falls back to message/send), push
//     notifications when configured, the parts' media types as input modes.
//     Tasks created elsewhere are never submitted: that would replace their
//     pin.
//   - a2a.task.request before each call on a known task, with the JSON-RPC
//     v0.3 method name whatever the transport, and the attempt: 1, plus one
//     per consecutive failure of the same method on the task.
//   - a2a.task.status whenever the state seen changes (skillId from the
//     status message's metadata "skillId", when present).
//   - a2a.task.artifact for each artifact with media types not reported yet
//     (MediaTypes).
//   - a2a.task.error for each failed call on a known task that carries an
//     A2A/JSON-RPC error (ErrorCode; a code a2a-go does not know reaches it
//     as -32603). Transport failures emit nothing but count as a failure.
//
// # The card
//
// a2a.AgentCard drops fields it does not know and cannot tell false from
// absent, so a card marshalled from it does not hash to the card served.
// Give the bytes as served in Options.RawCard (ResolveCard fetches both).
// Without RawCard the submission carries no card and carddrift pins the
// first card it fetches, unless Options.MarshalCard asks for the lossy
// round trip.
//
// # Failure and cost
//
// The interceptor never fails or changes a call: publish errors go to
// Options.OnError. Events are handed to the Emitter in order, with the
// call's context values (an OpenTelemetry span's trace context goes onto
// the events) but not its cancellation. It is safe for concurrent use and
// remembers up to Options.MaxTasks tasks, forgetting one at a terminal
// state.
package a2aemit
