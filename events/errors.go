package events

import (
	"errors"
	"fmt"
)

// Conditions of Decode (inside a *DecodeError) and of Encode. Test with
// errors.Is.
var (
	// ErrMalformedEnvelope is returned by Decode when the message is not a
	// well-formed CloudEvent carrying JSON data (Reason says what is wrong),
	// or its subject attribute is not the data's task id.
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
	// ErrInvalidEvent is returned (wrapped) by Encode and the publishers for
	// an event they cannot encode, and by CheckSource for a bad source.
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
	Err     error
	Mode    Mode
	Subject string // the NATS subject
	// Type, ID and Source are the attributes as far as they were read.
	Type, ID, Source string
	// Attribute names the attribute or header at fault ("ce-time"), if any.
	Attribute string
	// Field is the JSON pointer of a violating data field ("": the whole).
	Field  string
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
