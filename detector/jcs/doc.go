// Package jcs parses JSON strictly and writes it in the canonical form of
// RFC 8785, the JSON Canonicalization Scheme, which carddrift hashes to
// identify an agent card regardless of whitespace, key order and number
// spelling.
//
// # Parsing
//
// Parse reads one RFC 8259 JSON text into a Value tree under Limits (1 MiB and
// 64 levels of nesting by default). It is strict where RFC 8785 needs it to
// be: input must be valid UTF-8, escaped lone surrogates ("\ud800") are
// rejected, duplicate object keys are rejected, and NaN, Infinity, leading
// zeros and numbers outside the float64 range are not JSON. Every error is a
// *SyntaxError carrying a byte offset and wrapping one sentinel (ErrNotJSON,
// ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge, ErrTooDeep, and ErrNotObject
// from ParseObject), so callers classify failures with errors.Is:
//
//	v, err := jcs.ParseObject(body, jcs.Limits{})
//	if errors.Is(err, jcs.ErrDuplicateKey) { ... }
//
// Numbers keep their literal in Value.Str; Value.Float converts it.
//
// # Scanning
//
// Scanner is the reader underneath: it walks one JSON text value by value
// (Value, NextKey, NextElem, End) under the same rules and with the same
// errors, and leaves what to build to its caller. Parse and AppendCanonical
// are built on it, and so is the event decoder of package events, which
// builds the map[string]any tree its JSON Schema validator takes: carddrift
// has one strict JSON reader. The one rule Parse adds to the Scanner's is
// RFC 8785's: numbers outside the float64 range are refused.
//
// # Canonical form
//
// Append writes a tree in canonical form: object members sorted by the
// UTF-16 code units of their keys, strings with only the mandatory escapes
// (\" \\ \b \f \n \r \t and \u00xx for other controls) and everything else as
// literal UTF-8, numbers as ECMAScript's Number.prototype.toString writes
// them (AppendFloat), no whitespace. AppendWithout leaves out one top-level
// member, as A2A card signing leaves out "signatures".
//
// Transform and AppendCanonical go from bytes to canonical bytes. They
// first try a fast canonicalizer (fast.go) that writes while it parses,
// keeps no Scanner state, allocates nothing in the steady state and reports
// no errors, which is what makes a card digest cheap; on anything it does
// not handle (every error, keys with escapes, objects of 64 members or
// more) Parse and Append write the output or report the error, and stay the
// oracle the fast path is tested against (FuzzFastCanonical). Options leave
// out a top-level member and require an object.
//
// All functions are safe for concurrent use; a Value is not modified by
// anything in this package after Parse returns it.
package jcs
