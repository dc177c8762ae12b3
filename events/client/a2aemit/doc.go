// Package a2aemit connects an a2a-go client (github.com/a2aproject/a2a-go
// v0.3) to carddrift: an a2aclient.CallInterceptor that publishes the task
// lifecycle events carddrift workers judge — a2a.task.submitted, request,
// status, artifact and error — through an client.Emitter, so that an
// existing Go A2A client gets card-drift detection by adding one option
// (for an A2A v1.0 client on github.com/a2aproject/a2a-go/v2, package
// a2aemitv2 is the same interceptor; both share Plan and Options):
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
//     interceptor (a SendMessage or SendStreamingMessage whose message has no
//     task id), as soon as the first response names the task. It carries the
//     card the client planned against (see "The card" below), the Plan from
//     the call's context (WithPlan, else Options.Plan), and what the call
//     shows the task needs: streaming when it streams (the a2a-go client
//     falls back to message/send when its card does not declare streaming,
//     and then streaming is not required), push notifications when the
//     message configures them, and the media types of the message's parts as
//     input modes. Tasks the client did not create through this interceptor
//     are never (re-)submitted: that would replace their pin.
//   - a2a.task.request before each call on a known task (for a new task,
//     right after its submission), with the JSON-RPC v0.3 method name
//     (message/send, message/stream, tasks/get, tasks/resubscribe,
//     tasks/pushNotificationConfig/*, ...) whatever the transport, and the
//     attempt: 1, plus one for each consecutive failure of the same method on
//     the same task (a failed call followed by the same call is a retry).
//   - a2a.task.status whenever a response or stream event shows a task state
//     different from the last one seen (its skillId from the status
//     message's metadata "skillId", a convention, when present).
//   - a2a.task.artifact for each artifact with media types not reported yet
//     for it: a FilePart's mimeType (application/octet-stream when absent), a
//     DataPart as application/json, a TextPart as text/plain.
//   - a2a.task.error for each failed call on a known task that carries an
//     A2A/JSON-RPC error, with its code. a2a-go turns wire errors into its
//     sentinel errors (a2a.ErrInvalidParams, ...), mapped back to their codes
//     here; a code the a2a-go client does not know (for example the v1.0
//     -32008 and -32009) reaches it as a2a.ErrInternalError and is reported
//     as -32603. Transport failures (no JSON-RPC error) emit nothing but
//     still count as a failure for the next attempt number.
//
// # The card
//
// The a2a-go a2a.AgentCard struct drops fields it does not know and cannot
// tell false from absent, so a card marshalled from it does not hash to the
// card the agent serves: carddrift would see a difference where there is
// none, or miss one. Give the bytes as served in Options.RawCard (ResolveCard
// fetches both the bytes and the struct, through carddrift's fetcher: the
// workers' headers, card URL resolution, limits and SSRF guard, with the
// guard's Allow set by the caller). Without RawCard the submission
// carries no card and carddrift pins the first card it fetches — which
// misses a change between the client's discovery and that fetch — unless
// Options.MarshalCard asks for the lossy struct round trip anyway.
//
// # Failure and cost
//
// The interceptor never fails or changes a call: publish errors go to
// Options.OnError. Each event is published synchronously (the JetStream ack
// is awaited, bounded by the Emitter's timeout, independent of the call's
// context, which carries the W3C trace context of an OpenTelemetry span
// onto the events) so that a task's events reach the stream in order; budget a
// JetStream round trip per event. The interceptor is safe for concurrent use
// by many calls; it remembers per-task state for up to Options.MaxTasks
// tasks and forgets a task when it reaches a terminal state.
package a2aemit
