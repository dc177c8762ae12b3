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
// Its options are package publish's. Packages a2aemit (a2a-go v0.3) and
// a2aemitv2 (A2A v1.0) wire an Emitter into an a2a-go client; package
// planner receives card.drift verdicts and checks a live card.
package client
