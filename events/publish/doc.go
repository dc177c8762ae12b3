// Package publish puts carddrift's events on JetStream: a Publisher
// encodes an events.Event (events.Encode), stamps what it leaves empty
// (source, time, id) and publishes it with a Nats-Msg-Id — for card.*
// outcomes the deterministic events.MsgID, so that the same drift is
// stored once however often, and by however many workers, it is
// published — waiting for the stream's ack.
//
// The worker publishes its outcomes with a Publisher; client.Emitter, the
// A2A client's API, encodes with one and publishes through a Queue: off
// the caller's path, asynchronously and in batches, within a bounded
// buffer, retrying (stored once) what was not acknowledged. WithTraceContext and TraceContext carry a
// W3C trace context in a context.Context from an inbound event (or an A2A
// client's call) to the events published in consequence.
//
// The wire contract itself — types, subjects, codec, message ids, the
// stream topology — is package events; this package only publishes it.
package publish
