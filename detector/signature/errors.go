package signature

import "errors"

// Sentinel errors. Test with errors.Is; the errors returned wrap them with
// the detail of what was wrong.
var (
	// ErrNotCard is returned by Canonical and Verify when the bytes are not a
	// card: not a JSON object, or JSON that jcs.ParseObject refuses (the
	// *jcs.SyntaxError is wrapped too).
	ErrNotCard = errors.New("signature: not an agent card")
	// ErrUnknownForm is returned by Canonical for a Form it does not know.
	ErrUnknownForm = errors.New("signature: unknown canonical form")
	// ErrMalformed is returned by ParseJWS when a signatures entry is not a
	// JWS in the A2A shape (§8.4.2): not an object, "protected" or
	// "signature" missing or not base64url, a protected header that is not a
	// JSON object or lacks alg, kid or typ, an unprotected header that is
	// not an object or repeats a protected parameter, or a "crit" or "b64"
	// parameter.
	ErrMalformed = errors.New("signature: malformed JWS")
	// ErrUnsupportedAlg is returned by ParseJWS when a well-formed entry names
	// an algorithm Verify does not accept (see Algorithms): "none", HMAC, or
	// one it does not know.
	ErrUnsupportedAlg = errors.New("signature: unsupported algorithm")
	// ErrInvalidJWKS is returned by ParseJWKS when the bytes are not a JSON
	// Web Key Set: not a JSON object, or no "keys" array.
	ErrInvalidJWKS = errors.New("signature: not a JSON Web Key Set")
	// ErrJKURefused is returned by Sources.Lookup when its AllowJKU refuses
	// the jku a signature names (and no trusted key answers).
	ErrJKURefused = errors.New("signature: jku not allowed")
	// ErrUnusableKey is returned by NewKey (and listed by KeySet.Skipped)
	// for a JWK that cannot verify card signatures: symmetric, private,
	// meant for encryption, an RSA modulus under 2048 bits, or a key type
	// go-jose does not read.
	ErrUnusableKey = errors.New("signature: key cannot verify signatures")
)
