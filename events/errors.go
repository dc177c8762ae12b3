package events

import (
	"errors"
	"fmt"
)

// Conditions of Decode (inside a *DecodeError) and of Encode. Test with
// errors.Is.
var (
	// ErrMalformedEnvelope is returned by Decode when the message is not a
	// well-formed CloudEvent carrying JSON data: neither binary (ce-specversion
	// header) nor structured (content-type application/cloudevents+json);
	// specversion other than 1.0; a missing or empty id, source or type; an
	// invalid time, dataschema or extension name; repeated headers or JSON
	// members; data that is not JSON (bad syntax, invalid UTF-8, nesting deeper
	// than MaxDepth, a non-JSON datacontenttype); or a subject attribute that
	// is not the data's task id.
	ErrMalformedEnvelope = errors.New("events: malformed CloudEvent envelope")
	// ErrUnknownType is returned by Decode for a CloudEvents type carddrift has
	// no schema for, or a dataschema id it does not know (a newer version).
	ErrUnknownType = errors.New("events: unknown event type")
	// ErrSchemaViolation is returned by Decode and Encode when the event data
	// does not conform to its schema. The error chain also holds a
	// *schemas.ValidationError naming the field (errors.As).
	ErrSchemaViolation = errors.New("events: data violates schema")
)

var (
	// ErrInvalidEvent is returned (wrapped) by Encode, publish.Publisher's
	// Publish and client.Emitter's methods for an event they cannot encode:
	// no data, a missing id or source, a type, subject or dataschema that
	// contradicts the data, or a bad extension; and by CheckSource,
	// publish.New and client.NewEmitter for a bad source.
	ErrInvalidEvent = errors.New("events: invalid event")
	// ErrInvalidToken is returned (wrapped) by ParseToken for a string that
	// Token cannot have produced.
	ErrInvalidToken = errors.New("events: invalid subject token")
	// ErrInvalidSubject is returned (wrapped) by Subject, AgentHost and
	// AgentKey for ids or URLs that do not map to a carddrift subject.
	ErrInvalidSubject = errors.New("events: invalid subject")
	// ErrSubjectMismatch is returned (wrapped) by CheckSubject for a
	// lifecycle event whose subject names another kind than its type or
	// another task than its data.
	ErrSubjectMismatch = errors.New("events: subject disagrees with the event")
)

// DecodeError is the error Decode returns. Err is ErrMalformedEnvelope,
// ErrUnknownType or ErrSchemaViolation; Cause, if not nil, is the underlying
// error (a *schemas.ValidationError for a schema violation, a
// *jcs.SyntaxError with the byte offset for JSON that is not well-formed).
// errors.Is and errors.As see both.
type DecodeError struct {
	Err error
	// Mode is the content mode the message was read in.
	Mode Mode
	// Subject is the NATS subject of the message.
	Subject string
	// Type, ID and Source are the CloudEvents attributes, as far as they
	// were read before the failure.
	Type, ID, Source string
	// Attribute names the CloudEvents attribute or header at fault
	// (for example "time" or "ce-time"), "" if none.
	Attribute string
	// Field is the JSON pointer of the violating data field for a schema
	// violation ("" is the data as a whole).
	Field string
	// Reason says what is wrong.
	Reason string
	Cause  error
}

func (e *DecodeError) Error() string {
	msg := "events: decode"
	if e.Type != "" {
		msg += " " + e.Type
	}
	if e.ID != "" {
		msg += fmt.Sprintf(" event %q", e.ID)
	}
	if e.Subject != "" {
		msg += " on " + e.Subject
	}
	switch e.Err {
	case ErrMalformedEnvelope:
		msg += ": malformed envelope"
	case ErrUnknownType:
		msg += ": unknown type"
	case ErrSchemaViolation:
		msg += ": schema violation"
	}
	if e.Attribute != "" {
		msg += ": " + e.Attribute
	}
	if e.Err == ErrSchemaViolation {
		f := e.Field
		if f == "" {
			f = "(root)"
		}
		msg += ": data " + f
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns the condition and the cause.
func (e *DecodeError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}
