package events

import (
	"time"

	"github.com/nats-io/nats.go"
)

// Mode is a CloudEvents content mode over NATS.
type Mode int

const (
	// Binary carries the attributes in lower-case ce- headers (ce-id,
	// ce-type, ...) and the data as the payload. The default.
	Binary Mode = iota
	// Structured carries the whole event as JSON in the payload, with the
	// header content-type: application/cloudevents+json.
	Structured
)

func (m Mode) String() string {
	switch m {
	case Binary:
		return "binary"
	case Structured:
		return "structured"
	}
	return "invalid"
}

// Event is a carddrift CloudEvent (specversion 1.0) with typed data.
type Event struct {
	// ID identifies the event; unique per Source.
	ID string
	// Source names the producer: the A2A client, or the carddrift worker.
	Source string
	// Type is the event type (TypeSubmitted, ...). Encode fills it from Data
	// when empty.
	Type string
	// Subject is the task id ("" for agent-level events). Encode fills it
	// from Data when empty.
	Subject string
	// Time is when the event happened; zero means unset.
	Time time.Time
	// DataSchema is the schema id of the data. Encode fills it with the
	// current schema of Type when empty.
	DataSchema string
	// Data is one of Submitted, Request, Status, Artifact, Error, Drift,
	// Pinned, Observed or Unreachable: a value after Decode; Encode also
	// takes pointers.
	Data Data
	// Extensions are CloudEvents extension attributes (for example
	// traceparent), by lower-case name, as strings.
	Extensions map[string]string
}

// The CloudEvents distributed-tracing extension: the W3C trace context of
// the operation an event belongs to. carddrift copies both from a lifecycle
// event onto every event its handling publishes (card.drift, card.pinned,
// card.unreachable, card.inconsistent), in binary mode (ce-traceparent,
// ce-tracestate headers) and structured mode alike, so that a planner's
// trace runs from the client's request through carddrift's verdict.
const (
	ExtTraceParent = "traceparent"
	ExtTraceState  = "tracestate"
)

// TaskID returns the task id of the event's data ("" for agent-level events
// or no data).
func (e Event) TaskID() string {
	if e.Data == nil {
		return ""
	}
	t, _ := e.Data.ids()
	return t
}

// AgentURL returns the agent URL of the event's data.
func (e Event) AgentURL() string {
	if e.Data == nil {
		return ""
	}
	_, a := e.Data.ids()
	return a
}

// Msg is what Decode reads: a jetstream.Msg satisfies it, and NATSMsg adapts
// a *nats.Msg.
type Msg interface {
	Subject() string
	Headers() nats.Header
	Data() []byte
}

// NATSMsg adapts a core *nats.Msg to Msg.
func NATSMsg(m *nats.Msg) Msg { return natsMsg{m} }

type natsMsg struct{ m *nats.Msg }

func (n natsMsg) Subject() string      { return n.m.Subject }
func (n natsMsg) Headers() nats.Header { return n.m.Header }
func (n natsMsg) Data() []byte         { return n.m.Data }

// Header names.
const (
	headerPrefix      = "ce-"
	headerContentType = "content-type"
	// ContentTypeStructured is the content-type of a structured-mode event.
	ContentTypeStructured = "application/cloudevents+json"
	contentTypeJSON       = "application/json"
)
