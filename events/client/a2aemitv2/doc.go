// Package a2aemitv2 connects an A2A v1.0 Go client — the official SDK's v1.0
// line, module github.com/a2aproject/a2a-go/v2 — to carddrift: an
// a2aclient.CallInterceptor that publishes the task lifecycle events
// carddrift workers judge (a2a.task.submitted, request, status, artifact
// and error) through a client.Emitter. It is package a2aemit's counterpart
// for the v0.3 line (github.com/a2aproject/a2a-go v0.3) and behaves the
// same; both share their SDK-independent half, and Plan and WithPlan are
// the same (client.Plan, client.WithPlan), so a plan attached for one works
// for the other. Adding it to a client is one option:
//
//	em, _ := client.NewEmitter(js, "urn:client:billing")
//	f, _ := fetcher.New(fetcher.Options{}) // Allow: what the SSRF guard may reach
//	card, _ := a2aemitv2.ResolveCard(ctx, f, agentURL)
//	cl, _ := a2aclient.NewFromCard(ctx, card.AgentCard,
//		a2aemitv2.WithLifecycleEvents(em, a2aemitv2.Options{RawCard: card.Raw, CardURL: card.URL}))
//	...
//	ctx = a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "summarize", Posture: detector.Degrade, Idempotent: true})
//	for ev, err := range cl.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) { ... }
//
// # What is emitted
//
//   - a2a.task.submitted once per task the client creates through the
//     interceptor (a SendMessage or SendStreamingMessage whose message has no
//     task id), as soon as the first response names the task, with the card
//     the client planned against (see "The card"), the Plan from the call's
//     context (WithPlan, else Options.Plan), and what the call shows the
//     task needs: streaming when it streams (the a2a-go/v2 client falls back
//     to SendMessage when its card does not declare streaming, and then
//     streaming is not required), push notifications when the message
//     configures them, and the media types of the message's parts as input
//     modes. Tasks the client did not create through this interceptor are
//     never (re-)submitted: that would replace their pin.
//   - a2a.task.request before each call on a known task (for a new task,
//     right after its submission), with the A2A v1.0 method name as the
//     SDK's JSON-RPC transport sends it (SendMessage, SendStreamingMessage,
//     GetTask, CancelTask, SubscribeToTask, CreateTaskPushNotificationConfig,
//     GetTaskPushNotificationConfig, ListTaskPushNotificationConfigs,
//     DeleteTaskPushNotificationConfig, GetExtendedAgentCard) whatever the
//     transport, and the attempt: 1, plus one for each consecutive failure
//     of the same method on the same task.
//   - a2a.task.status whenever a response or stream event shows a task state
//     different from the last one seen, in the v1.0 spelling
//     (TASK_STATE_INPUT_REQUIRED, ...), which carddrift normalises (its
//     skillId from the status message's metadata "skillId" when present).
//   - a2a.task.artifact for each artifact with media types not reported yet
//     for it: a part's mediaType, else text/plain for a text part,
//     application/json for a data part and application/octet-stream for raw
//     bytes or a URL.
//   - a2a.task.error for each failed call on a known task that carries an
//     A2A error, with its JSON-RPC code: a2a-go/v2 turns wire errors into its
//     sentinel errors (a2a.ErrInvalidParams, ...), mapped back to their codes
//     here, v1.0's -32008 (extension support required), -32009 (version not
//     supported), -31401 and -31403 (unauthenticated, unauthorized)
//     included. Transport failures emit nothing but still count as a
//     failure for the next attempt number.
//
// # The card
//
// The a2a-go/v2 a2a.AgentCard struct drops fields it does not know, so a card
// marshalled from it does not hash to the card the agent serves. Give the
// bytes as served in Options.RawCard: ResolveCard fetches both, through
// carddrift's fetcher (the workers' headers, card URL resolution, limits and
// SSRF guard, whose Allow the caller sets), and decodes the v1.0 shape
// (supportedInterfaces) as the SDK's default card parser does. carddrift
// then pins exactly the card the client was built from. Without RawCard the
// submission carries no card and carddrift pins the first card it fetches,
// unless Options.MarshalCard asks for the lossy struct round trip.
//
// # Failure and cost
//
// The interceptor never fails, short-circuits or changes a call: Before
// returns no early result or error, After no error; publish errors go to
// Options.OnError. Each event is published synchronously (the JetStream ack
// is awaited, bounded by the Emitter's timeout, independent of the call's
// context, which carries the W3C trace context of an OpenTelemetry span
// onto the events) so that a task's events reach the stream in order. Safe
// for concurrent use; per-task state for up to Options.MaxTasks tasks, a
// task forgotten when it reaches a terminal state.
package a2aemitv2
