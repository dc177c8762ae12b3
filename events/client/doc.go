// Package client is carddrift's client side: what an A2A client or a
// planner links to take part in drift detection.
//
// An A2A client reports its tasks' lifecycle with an Emitter, one call per
// event (Submitted, Request, Status, Artifact, Error), published on
// a2a.task.<kind>.<taskId> for carddrift's workers to judge:
//
//	em, err := client.NewEmitter(js, "urn:client:planner-7", publish.WithLogger(log))
//	...
//	defer em.Close(ctx) // publishes what is still queued
//	err = em.Request(ctx, events.Request{TaskID: id, AgentURL: url, Method: "message/stream", Attempt: 1})
//
// A call validates the event and queues it: the Emitter publishes off the
// call's path, in batches, with a bounded buffer; a full buffer or an
// unreachable server drops events (Dropped, DroppedCounter) and never
// blocks or fails the call. Its options are package publish's
// (publish.WithTimeout, publish.WithBuffer, publish.WithLogger,
// publish.WithIDs, ...), and publish.WithTraceContext puts a W3C trace
// context on the events of a call.
//
// Below it: packages a2aemit (a2a-go v0.3) and a2aemitv2 (a2a-go/v2, A2A
// v1.0) wire an Emitter into an a2a-go client as a CallInterceptor, sharing
// Plan and WithPlan from here, and package planner receives the
// card.drift verdicts and checks a live card before a task is submitted.
package client
