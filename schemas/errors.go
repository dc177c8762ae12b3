package schemas

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownType is returned by Lookup and Validate for an event type that
	// has no schema.
	ErrUnknownType = errors.New("schemas: unknown event type")
	// ErrUnknownSchema is returned by ByID for a schema id not embedded.
	ErrUnknownSchema = errors.New("schemas: unknown schema id")
)

// ValidationError reports event data that does not conform to its schema:
// the first violating field by JSON pointer ("" is the data as a whole);
// Reason says how many more there are.
type ValidationError struct {
	Type   string // the event type whose schema was applied
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	field := e.Field
	if field == "" {
		field = "(root)"
	}
	return fmt.Sprintf("schemas: %s data: %s: %s", e.Type, field, e.Reason)
}
