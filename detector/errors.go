package detector

import (
	"errors"
	"fmt"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Sentinel errors returned by Parse. Test with errors.Is; the concrete error
// returned may wrap them with the position where the problem was found.
var (
	// ErrNotJSON is returned when the input is not well-formed JSON. It is
	// jcs.ErrNotJSON: the JSON-level sentinels are those of package jcs, which
	// does the parsing.
	ErrNotJSON = jcs.ErrNotJSON
	// ErrNotObject is returned when the input is JSON but not an object.
	ErrNotObject = jcs.ErrNotObject
	// ErrDuplicateKey is returned when an object has the same key twice.
	ErrDuplicateKey = jcs.ErrDuplicateKey
	// ErrInvalidUTF8 is returned when a string is not valid UTF-8 (including
	// escaped lone surrogates).
	ErrInvalidUTF8 = jcs.ErrInvalidUTF8
	// ErrTooLarge is returned when the input exceeds Limits.MaxBytes.
	ErrTooLarge = jcs.ErrTooLarge
	// ErrTooDeep is returned when nesting exceeds Limits.MaxDepth.
	ErrTooDeep = jcs.ErrTooDeep
	// ErrMissingIdentity is returned when a card has neither a name nor an
	// interface URL.
	ErrMissingIdentity = errors.New("card has no name and no interface URL")
	// ErrInvalidField is returned (inside a *FieldError) when a known field has the
	// wrong JSON type or an invalid value.
	ErrInvalidField = errors.New("invalid card field")
	// ErrUnsupportedVersion is returned (inside an *UnsupportedVersionError) for a
	// protocol version carddrift does not support.
	ErrUnsupportedVersion = errors.New("unsupported protocol version")
)

// SupportedVersions are the protocol version lines carddrift parses.
var SupportedVersions = []string{"0.1", "0.2", "0.3", "1.0"}

// SyntaxError locates a JSON problem. Err is one of ErrNotJSON, ErrNotObject,
// ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge or ErrTooDeep. It is
// jcs.SyntaxError, so errors.As matches it whichever name the caller uses.
type SyntaxError = jcs.SyntaxError

// FieldError reports a known card field with the wrong type or value.
type FieldError struct {
	Pointer string // JSON pointer of the field
	Reason  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("invalid card field %s: %s", e.Pointer, e.Reason)
}

func (e *FieldError) Unwrap() error { return ErrInvalidField }

// UnsupportedVersionError reports a protocol version outside SupportedVersions.
type UnsupportedVersionError struct {
	Version   string
	Pointer   string
	Supported []string
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("unsupported protocol version %q at %s (supported: %s)", e.Version, e.Pointer, strings.Join(e.Supported, ", "))
}

func (e *UnsupportedVersionError) Unwrap() error { return ErrUnsupportedVersion }

// ValueError reports a bad enumerated value passed by a caller.
type ValueError struct {
	Field   string
	Value   string
	Allowed []string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid %s %q (allowed: %s)", e.Field, e.Value, strings.Join(e.Allowed, ", "))
}
