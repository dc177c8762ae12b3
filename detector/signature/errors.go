package signature

import "errors"

// Sentinel errors, wrapped with the detail of what was wrong.
var (
	// ErrNotCard: Canonical, Verify or Sign got bytes that are not a JSON
	// object (a *jcs.SyntaxError is wrapped too).
	ErrNotCard     = errors.New("signature: not an agent card")
	ErrUnknownForm = errors.New("signature: unknown canonical form")
	// ErrMalformed: ParseJWS got an entry not in the A2A shape (§8.4.2).
	ErrMalformed = errors.New("signature: malformed JWS")
	// ErrUnsupportedAlg: ParseJWS got an alg outside Algorithms.
	ErrUnsupportedAlg = errors.New("signature: unsupported algorithm")
	// ErrInvalidJWKS: ParseJWKS got no JSON object with a "keys" array.
	ErrInvalidJWKS = errors.New("signature: not a JSON Web Key Set")
	// ErrJKURefused: Sources.AllowJKU refused the jku (no trusted key answered).
	ErrJKURefused = errors.New("signature: jku not allowed")
	// ErrUnusableKey: NewKey (or KeySet.Skipped) refuses a JWK that cannot
	// verify card signatures.
	ErrUnusableKey = errors.New("signature: key cannot verify signatures")
)
