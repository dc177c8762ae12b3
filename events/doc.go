// Package events is carddrift's event contract in Go: the typed data of every
// CloudEvent carddrift consumes or produces, their NATS subjects, and their
// encoding to and decoding from JetStream messages.
//
// # Events
//
// A2A clients publish lifecycle events (Submitted, Request, Status, Artifact,
// Error; types a2a.task.*) on a2a.task.<kind>.<taskId>. carddrift publishes
// its outcomes (Drift, Pinned, Observed, Unreachable; types card.*) on
// card.<event>.<agentKey>[.<taskId>]. The data of each type has a JSON Schema
// in package schemas; an Event's DataSchema attribute names it, and both
// Encode and Decode validate against it.
//
// # Subjects and modes
//
// Token turns ids into subject tokens (reversible with ParseToken);
// AgentKey is the token of an agent URL's host; Subject gives an event's
// subject. Binary mode (the default) carries the attributes as ce- headers,
// Structured the CloudEvents JSON format. Decode reads the data straight
// into its Go type and checks it against its schema in the same pass.
// Lifecycle events are published with a client.Emitter, outcomes with a
// publish.Publisher, which sets the deterministic Nats-Msg-Id (MsgID).
//
// # Consuming
//
// Decode reads any jetstream.Msg (NATSMsg adapts a *nats.Msg):
//
//	ev, err := events.Decode(msg)
//	switch {
//	case errors.Is(err, events.ErrMalformedEnvelope), errors.Is(err, events.ErrSchemaViolation):
//		msg.TermWithReason(err.Error()) // redelivery cannot fix it
//	case errors.Is(err, events.ErrUnknownType):
//		msg.TermWithReason(err.Error()) // or route elsewhere
//	case err == nil:
//		switch d := ev.Data.(type) {
//		case events.Request:
//			_ = d.Method
//		}
//	}
//
// Decode never acknowledges messages; that is the consumer's decision.
package events
