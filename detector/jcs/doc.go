// Package jcs parses JSON strictly and writes it in the canonical form of
// RFC 8785, the JSON Canonicalization Scheme, which carddrift hashes to
// identify an agent card regardless of whitespace, key order and number
// spelling.
//
// Parse reads one JSON text into a Value tree under Limits (1 MiB and 64
// levels of nesting by default), strict where RFC 8785 needs it: valid UTF-8,
// no escaped lone surrogates, no duplicate keys, no NaN, Infinity, leading
// zeros or numbers outside the float64 range. Every error is a *SyntaxError
// with a byte offset, wrapping one sentinel, so callers classify failures
// with errors.Is:
//
//	v, err := jcs.ParseObject(body, jcs.Limits{})
//	if errors.Is(err, jcs.ErrDuplicateKey) { ... }
//
// Scanner is the reader underneath, value by value, with the same rules and
// errors: Parse and AppendCanonical are built on it, and so is the event
// decoder of package events. carddrift has one strict JSON reader.
//
// Append writes a tree in canonical form; AppendWithout leaves out one
// top-level member, as A2A card signing leaves out "signatures". Transform
// and AppendCanonical go from bytes to canonical bytes, through a fast
// canonicalizer (fast.go) that writes while it parses and allocates nothing
// in the steady state; what it does not handle, errors included, goes
// through Parse and Append, the oracle it is tested against
// (FuzzFastCanonical).
//
// All functions are safe for concurrent use; a Value is not modified by
// anything in this package after Parse returns it.
package jcs
