// Package jcs parses JSON strictly and writes it in the canonical form of
// RFC 8785 (JCS), which carddrift hashes to name an agent card whatever its
// whitespace, key order and number spelling.
//
// Parse reads one JSON text into a Value tree under Limits, strict where
// RFC 8785 needs it (valid UTF-8, no lone surrogates, no duplicate keys, no
// numbers outside float64). Every error is a *SyntaxError wrapping a
// sentinel, for errors.Is:
//
//	v, err := jcs.ParseObject(body, jcs.Limits{})
//	if errors.Is(err, jcs.ErrDuplicateKey) { ... }
//
// Scanner is the reader underneath, value by value (the event decoder uses
// it too). Append writes a tree in canonical form; AppendCanonical goes from
// bytes to canonical bytes through a fast path (fast.go) that allocates
// nothing in the steady state, with Parse and Append as its oracle
// (FuzzFastCanonical). All functions are safe for concurrent use.
package jcs
