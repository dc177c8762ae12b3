package events

import (
	"time"

	"github.com/nats-io/nats.go"
)

// Mode is a CloudEvents content mode over NATS.
type Mode int

const (
	Binary     Mode = iota // ce- headers and the data as payload; the default
	Structured             // application/cloudevents+json
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
	ID         string // unique per Source
	Source     string
	Type       string    // Encode fills it from Data when empty
	Subject    string    // the task id; Encode fills it from Data when empty
	Time       time.Time // zero: unset
	DataSchema string    // Encode fills it with Type's current schema
	Data       Data
	// Extensions are extension attributes (traceparent) by lower-case name.
	Extensions map[string]string
}

// The CloudEvents distributed-tracing extension, which carddrift copies
// from a lifecycle event onto every event its handling publishes.
const (
	ExtTraceParent = "traceparent"
	ExtTraceState  = "tracestate"
)

// TaskID returns the task id of the event's data ("" for agent-level).
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

// Msg is what Decode reads: a jetstream.Msg, or NATSMsg of a *nats.Msg.
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
