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
// # Subjects
//
// Ids become subject tokens with Token, an injective, reversible encoding
// (ParseToken) whose output uses only [A-Za-z0-9_=-]: dots, wildcards,
// spaces, non-ASCII and empty ids are safe. AgentKey is the token of an
// agent URL's normalised host. Subject gives an event's subject; streams
// cover InboundSubjects and OutboundSubjects.
//
// # Content modes
//
// Binary mode (the default) carries the attributes as lower-case ce- headers
// and the data as the payload; Structured mode carries the CloudEvents JSON
// format with content-type application/cloudevents+json. Encode uses the
// sdk-go event model and codec for both; NewMessage exposes a NATS message
// to sdk-go's binding package. Decode accepts both and is the fast path: one
// pass per message, the data read straight into its Go type and checked
// against its schema as it is read (schemas.Reader).
//
// # Publishing
//
// Publishing is not the contract's: an A2A client publishes lifecycle
// events with a client.Emitter (package events/client), one call per
// event; carddrift workers publish outcomes with a publish.Publisher
// (package events/publish), whose Publish sets the deterministic
// Nats-Msg-Id (MsgID) so that the same drift is stored once however often
// it is published.
//
// # Topology
//
// The streams, subjects, partitions and consumers clients, planners and
// workers share are package store/topology's (InboundSubjects and
// OutboundSubjects are its default subjects); store.Config embeds its
// Topology and provisions it.
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
