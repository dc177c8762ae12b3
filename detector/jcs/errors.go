package jcs

import (
	"errors"
	"fmt"
)

// Sentinel errors, returned inside a *SyntaxError (but ErrNotNumber).
var (
	// ErrNotJSON: not RFC 8259 JSON (syntax, trailing data, NaN, leading
	// zeros, a number outside float64, a raw control character, no input).
	ErrNotJSON = errors.New("not JSON")
	// ErrNotObject: ParseObject's input is JSON of another kind.
	ErrNotObject = errors.New("not a JSON object")
	// ErrDuplicateKey: an object has a key twice (compared unescaped).
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrInvalidUTF8: invalid UTF-8, or an escaped lone surrogate.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	ErrTooLarge    = errors.New("input exceeds size limit")    // Limits.MaxBytes
	ErrTooDeep     = errors.New("input exceeds nesting limit") // Limits.MaxDepth
	ErrNotNumber   = errors.New("value is not a number")       // Value.Float of another kind
)

// SyntaxError locates a problem in JSON input; Unwrap returns the sentinel.
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

func (e *SyntaxError) Unwrap() error { return e.Err }

// maxQuote bounds how much of the input an error message may repeat, so that a
// hostile document cannot write megabytes (or terminal escapes) into logs.
const maxQuote = 32

func quote(s string) string {
	if len(s) > maxQuote {
		return fmt.Sprintf("%q (truncated from %d bytes)", s[:maxQuote], len(s))
	}
	return fmt.Sprintf("%q", s)
}
