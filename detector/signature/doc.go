// Package signature verifies the JWS signatures an A2A v1.0 agent card may
// carry (A2A v1.0.1 §8.4) and says who signed it: key id, algorithm and the
// RFC 7638 thumbprint of the key. It is pure: it reads bytes and asks a Keys
// for keys (fetching key sets is the fetcher's job).
//
// A card signature is a JWS with a detached payload, the card's canonical
// form without "signatures". Signers do not agree on that form, so Verify
// tries three (FormServed, FormSDK, FormSpec) and Result.Form records which
// verified. Sources composes the operator's trusted keys with the key set a
// signature names in its jku (the signer's own claim: Result.Source). Keys
// that cannot be obtained leave a signature unverified, never invalid.
// Verify bounds the work per card (Limits).
//
//	keys := signature.Sources{Trusted: trusted, JKU: jwks} // jwks: *fetcher.JWKS
//	results, err := signature.Verify(ctx, raw, keys)
//	if err != nil { ... } // raw is not a card (ErrNotCard)
//	for _, r := range results {
//		// r.Verified, r.Reason, r.KeyID, r.Alg, r.Thumbprint, r.Source, r.Form
//	}
//
// Sign makes signatures the same way. Every function is safe for concurrent
// use.
package signature
