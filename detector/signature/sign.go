package signature

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/jcs"
)

// SignOptions say how Sign signs.
type SignOptions struct {
	// KeyID is the kid of the protected header. Required.
	KeyID string
	// Alg is the JWS algorithm, one of Algorithms; "" picks one from the
	// key: ES256, ES384 or ES512 by curve, RS256 for RSA, EdDSA for Ed25519.
	Alg string
	// JKU, if set, is the jku of the protected header: where verifiers may
	// fetch the key set.
	JKU string
	// Form is the canonical form signed. Default FormSDK, which is what the
	// A2A SDKs verify; FormServed covers every member the card serves but
	// only verifiers that try it (carddrift does) accept it.
	Form Form
}

// Sign returns the agent card raw with one more signature in its
// "signatures" array (created if absent), made with key over the card's
// canonical form: a JWS whose protected header is
// {"alg","jku","kid","typ":"JOSE"}, as A2A v1.0.1 §8.4.2 and @a2a-js/sdk's
// generateAgentCardSignature make them. The card is returned in RFC 8785
// form. key is an *ecdsa.PrivateKey, *rsa.PrivateKey or ed25519.PrivateKey
// (or a crypto.Signer go-jose accepts for Alg). It returns ErrNotCard when
// raw is not a card, ErrUnknownForm, or an error from go-jose.
func Sign(raw []byte, key crypto.Signer, opts SignOptions) ([]byte, error) {
	if opts.Form == "" {
		opts.Form = FormSDK
	}
	if !opts.Form.valid() {
		return nil, fmt.Errorf("%w: %q", ErrUnknownForm, opts.Form)
	}
	if opts.KeyID == "" {
		return nil, fmt.Errorf("signature: Sign needs a KeyID")
	}
	if opts.Alg == "" {
		opts.Alg = defaultAlg(key)
	}
	card, err := jcs.ParseObject(raw, jcs.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCard, err)
	}
	protected, sig, err := signJWS(AppendCanonical(nil, &card, opts.Form), key, opts)
	if err != nil {
		return nil, err
	}
	entry := jcs.Value{Kind: jcs.Object, Members: []jcs.Member{
		{Key: "protected", Value: jcs.Str(protected)},
		{Key: "signature", Value: jcs.Str(sig)},
	}}

	out := jcs.Value{Kind: jcs.Object, Members: make([]jcs.Member, 0, len(card.Members)+1)}
	added := false
	for _, m := range card.Members {
		if m.Key == signaturesKey {
			arr := jcs.Value{Kind: jcs.Array}
			if m.Value.Kind == jcs.Array {
				arr.Elems = append(append(arr.Elems, m.Value.Elems...), entry)
			} else {
				arr.Elems = []jcs.Value{entry}
			}
			m.Value, added = arr, true
		}
		out.Members = append(out.Members, m)
	}
	if !added {
		out.Members = append(out.Members, jcs.Member{Key: signaturesKey, Value: jcs.Value{Kind: jcs.Array, Elems: []jcs.Value{entry}}})
	}
	return jcs.Append(nil, &out), nil
}

// signJWS returns the protected header and signature (both base64url) of a
// JWS over payload.
func signJWS(payload []byte, key crypto.Signer, opts SignOptions) (protected, sig string, err error) {
	if opts.Alg == algEd25519 { // go-jose does not know RFC 9864 names
		priv, ok := key.(ed25519.PrivateKey)
		if !ok {
			return "", "", fmt.Errorf("signature: alg Ed25519 needs an ed25519.PrivateKey, not %T", key)
		}
		hdr := jcs.Value{Kind: jcs.Object, Members: []jcs.Member{
			{Key: "alg", Value: jcs.Str(algEd25519)}, {Key: "kid", Value: jcs.Str(opts.KeyID)}, {Key: "typ", Value: jcs.Str("JOSE")},
		}}
		if opts.JKU != "" {
			hdr.Members = append(hdr.Members, jcs.Member{Key: "jku", Value: jcs.Str(opts.JKU)})
		}
		protected = base64.RawURLEncoding.EncodeToString(jcs.Append(nil, &hdr))
		input := base64.RawURLEncoding.AppendEncode([]byte(protected+"."), payload)
		return protected, base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, input)), nil
	}
	so := (&jose.SignerOptions{}).WithType("JOSE").WithHeader(jose.HeaderKey("kid"), opts.KeyID)
	if opts.JKU != "" {
		so = so.WithHeader(jose.HeaderKey("jku"), opts.JKU)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(opts.Alg), Key: key}, so)
	if err != nil {
		return "", "", fmt.Errorf("signature: %w", err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", "", fmt.Errorf("signature: %w", err)
	}
	compact, err := obj.DetachedCompactSerialize()
	if err != nil {
		return "", "", fmt.Errorf("signature: %w", err)
	}
	protected, sig, _ = strings.Cut(strings.Replace(compact, "..", ".", 1), ".")
	return protected, sig, nil
}

func defaultAlg(key crypto.Signer) string {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		return curveAlg[k.Curve]
	case *rsa.PrivateKey:
		return "RS256"
	case ed25519.PrivateKey:
		return "EdDSA"
	}
	return ""
}
