// Package a2aemitv2 connects an A2A v1.0 Go client — the official SDK's v1.0
// line, module github.com/a2aproject/a2a-go/v2 — to carddrift: an
// a2aclient.CallInterceptor that publishes the task lifecycle events
// carddrift workers judge (a2a.task.submitted, request, status, artifact
// and error) through a client.Emitter. It behaves as package a2aemit's
// documentation says, and shares its Plan. Adding it to a client is one
// option:
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
// What differs on the v1.0 line:
//
//   - a2a.task.request carries the A2A v1.0 method name as the SDK's
//     JSON-RPC transport sends it (the Method constants), whatever the
//     transport; a streaming send on a client whose card does not declare
//     streaming is sent, and named, SendMessage.
//   - a2a.task.status carries the v1.0 state spelling
//     (TASK_STATE_INPUT_REQUIRED, ...), which carddrift normalises.
//   - a2a.task.artifact reports a part's mediaType, else text/plain for a
//     text part, application/json for a data part and
//     application/octet-stream for raw bytes or a URL (MediaTypes).
//   - a2a.task.error maps a2a-go/v2's sentinel errors back to their codes,
//     v1.0's -32008 (extension support required), -32009 (version not
//     supported), -31401 and -31403 (unauthenticated, unauthorized)
//     included (ErrorCode).
//   - ResolveCard decodes the v1.0 card shape (supportedInterfaces) as the
//     SDK's default card parser does.
//   - Before never short-circuits a call: it returns no early result or
//     error.
package a2aemitv2
