package jcs

import (
	"errors"
	"fmt"
)

// Sentinel errors. Parse, ParseObject and Transform return them inside a
// *SyntaxError that says where the problem was found; test with errors.Is.
var (
	// ErrNotJSON is returned when the input is not well-formed RFC 8259 JSON:
	// a syntax error, trailing data after the value, NaN or Infinity, a number
	// with leading zeros, a number outside the float64 range (such as 1e400), a
	// raw control character inside a string, or empty input.
	ErrNotJSON = errors.New("not JSON")
	// ErrNotObject is returned by ParseObject when the input is well-formed JSON
	// whose top-level value is not an object. Parse never returns it.
	ErrNotObject = errors.New("not a JSON object")
	// ErrDuplicateKey is returned when an object has the same key twice
	// (compared after unescaping, so "a" and "\u0061" are the same key).
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrInvalidUTF8 is returned when the input holds bytes that are not valid
	// UTF-8, or a string escapes a lone surrogate ("\ud800" without a following
	// low surrogate, or a "\udc00" without a preceding high one).
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrTooLarge is returned when the input is longer than Limits.MaxBytes.
	ErrTooLarge = errors.New("input exceeds size limit")
	// ErrTooDeep is returned when arrays and objects nest deeper than
	// Limits.MaxDepth.
	ErrTooDeep = errors.New("input exceeds nesting limit")
	// ErrNotNumber is returned by Value.Float when the value is not a Number.
	ErrNotNumber = errors.New("value is not a number")
)

// SyntaxError locates a problem in JSON input. Err is one of ErrNotJSON,
// ErrNotObject, ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge or ErrTooDeep, and
// Unwrap returns it, so errors.Is(err, ErrDuplicateKey) works on the error
// returned by Parse.
type SyntaxError struct {
	Offset int    // byte offset in the input where the problem was found
	Detail string // what was found; never more than a short quote of the input
	Err    error
}

func (e *SyntaxError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v at byte %d", e.Err, e.Offset)
	}
	return fmt.Sprintf("%v at byte %d: %s", e.Err, e.Offset, e.Detail)
}

// Unwrap returns the sentinel error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// maxQuote bounds how much of the input an error message may repeat, so that a
// hostile document cannot write megabytes (or terminal escapes) into logs.
const maxQuote = 32

// quote renders a fragment of the input for an error message.
func quote(s string) string {
	if len(s) > maxQuote {
		return fmt.Sprintf("%q (truncated from %d bytes)", s[:maxQuote], len(s))
	}
	return fmt.Sprintf("%q", s)
}
