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
// (Form), from the one that covers most:
//
//   - FormServed: the card as served. Equal to the bytes carddrift's card
//     digest hashes; what the A2A TCK's card-signing vectors expect.
//   - FormSDK: what @a2a-js/sdk's canonicalizeAgentCard signs and verifies,
//     byte for byte: the card read as a v1.0 AgentCard (members outside the
//     schema dropped, snake_case accepted, JavaScript coercions), proto3
//     defaults left out, then every "", null, [] and {} removed at any depth.
//   - FormSpec: the §8.4.1 presence rules read literally (REQUIRED and
//     optional fields kept at their defaults when set), which reproduces the
//     specification's own example.
//
// Result.Form records which form verified, so callers know what the
// signature vouches for. An SDK-form signature says nothing about members
// outside the v1.0 schema, nor about security schemes served in the ts-proto
// shape ({"scheme":{"$case":…}}) that @a2a-js/sdk itself serves, nor about a
// security requirement with an empty scope list: the normalisation drops
// them all.
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
// A card is written by whoever serves it, or by the client that sends it in
// a2a.task.submitted, and each signature check is a public-key operation
// (an ES512 check costs milliseconds). Verify bounds the work per card
// (Limits, DefaultLimits): at most 16 signatures looked up, at most 2 keys
// that fit under one kid, the three forms, 8 public-key operations and 2 s
// of work in all, and it checks its context before every lookup and
// operation. A signature a limit stops is ReasonOverLimit — the detector
// reads it as one that does not verify — or ReasonNotChecked past the
// signatures limit. No real card comes near them: one signature costs at
// most three operations, a key rotation's two at most six.
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
