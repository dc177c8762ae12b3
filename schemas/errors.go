package schemas

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownType is returned by Lookup and Validate for an event type that
	// has no schema.
	ErrUnknownType = errors.New("schemas: unknown event type")
	// ErrUnknownSchema is returned by ByID for a schema id that is not embedded
	// (for example a version this build does not know).
	ErrUnknownSchema = errors.New("schemas: unknown schema id")
)

// ValidationError reports event data that does not conform to its schema. It
// names one violating field; when there are several, the first by JSON
// pointer is reported and Reason says how many more there are.
type ValidationError struct {
	// Type is the event type whose schema was applied.
	Type string
	// Field is a JSON pointer (RFC 6901) into the data: the property that is
	// missing, unknown or invalid. "" means the data as a whole (for example
	// data that is not a JSON object).
	Field string
	// Reason says what is wrong with the field.
	Reason string
}

func (e *ValidationError) Error() string {
	field := e.Field
	if field == "" {
		field = "(root)"
	}
	return fmt.Sprintf("schemas: %s data: %s: %s", e.Type, field, e.Reason)
}
