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
	KeyID string // required
	// Alg is one of Algorithms; "" picks one from the key.
	Alg string
	JKU string
	// Form is the canonical form signed; default FormSDK, what the SDKs verify.
	Form Form
}

// Sign returns the card raw, in RFC 8785 form, with one more signature made
// with key over its canonical form, as @a2a-js/sdk's
// generateAgentCardSignature makes them (typ "JOSE"). Errors: ErrNotCard,
// ErrUnknownForm, or go-jose's.
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

// signJWS returns the protected header and signature of a JWS over payload.
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
