package detector

import (
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
)

// SupportedVersions are the protocol version lines carddrift knows the
// schemas of. Cards and interfaces at other versions are read all the same.
var SupportedVersions = []string{"0.1", "0.2", "0.3", "1.0"}

// SyntaxError locates a JSON problem. Err is one of ErrNotJSON, ErrNotObject,
// ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge or ErrTooDeep. It is
// jcs.SyntaxError, so errors.As matches it whichever name the caller uses.
type SyntaxError = jcs.SyntaxError

// ValueError reports a bad enumerated value passed by a caller.
type ValueError struct {
	Field   string
	Value   string
	Allowed []string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid %s %q (allowed: %s)", e.Field, e.Value, strings.Join(e.Allowed, ", "))
}
