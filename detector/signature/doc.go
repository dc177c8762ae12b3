// Package signature verifies the JWS signatures an A2A v1.0 agent card may
// carry (A2A v1.0.1 §8.4) and says who signed it: key id, algorithm and the
// RFC 7638 thumbprint of the key. It is pure: it reads bytes and asks a Keys
// for keys; fetching key sets is the fetcher's job (fetcher.JWKS), deciding
// what a changed signer means is the detector's.
//
// # What a signature covers
//
// A card signature is a JWS with a detached payload: each entry of the card's
// "signatures" array is {"protected", "signature", "header"?}, and the
// payload — not carried — is the card's canonical form, base64url-encoded
// into the signing input BASE64URL(protected) "." BASE64URL(canonical). The
// canonical form is the card without "signatures", in RFC 8785 (JCS) form
// after a normalisation that signers do not agree on, so Verify tries three
// (Form: FormServed, FormSDK, FormSpec, from the one that covers most) and
// Result.Form records which verified, so callers know what the signature
// vouches for.
//
// # Keys and trust
//
// Keys answers Lookup(kid, jku). KeySet is a static set (ParseJWKS: a
// --jwks file); Sources composes the operator's trusted set with the key set
// a signature names in its jku, the trusted set answering alone for the kids
// it holds. A key set that cannot be obtained makes a signature unverified
// (ReasonKeysUnavailable), never invalid; a key found for the kid that does
// not verify makes it ReasonInvalidSignature. A jku key proves only who
// controls that URL: Result.Source says whether the key was trusted.
//
// # Limits
//
// A card is written by whoever serves it, and each signature check is a
// public-key operation: Verify bounds the work per card (Limits,
// DefaultLimits) and checks its context before every lookup and operation.
// A signature a limit stops is ReasonOverLimit, read by the detector as one
// that does not verify, or ReasonNotChecked past the signatures limit.
//
// # Use
//
//	keys := signature.Sources{Trusted: trusted, JKU: jwks} // jwks: *fetcher.JWKS
//	results, err := signature.Verify(ctx, raw, keys)
//	if err != nil { ... } // raw is not a card (ErrNotCard)
//	for _, r := range results {
//		// r.Verified, r.Reason, r.KeyID, r.Alg, r.Thumbprint, r.Source, r.Form
//	}
//
// Sign makes signatures the same way (tests, the fleet simulator). Every
// function is safe for concurrent use.
package signature
