package signature

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/jcs"
)

// JWS is one decoded entry of a card's "signatures" (A2A v1.0.1 §8.4.2),
// {"protected": …, "signature": …, "header": {...}}, its payload the card's
// canonical form.
type JWS struct {
	// Alg, KeyID, JKU and Typ are the protected header's: the unprotected one
	// is not integrity-protected.
	Alg, KeyID, JKU, Typ string
	Protected            string // as served (base64url)
	Signature            []byte

	obj *jose.JSONWebSignature // the same, parsed by go-jose (nil for Ed25519)
}

// algEd25519 is RFC 9864's EdDSA name, which JavaScript's jose prefers and
// go-jose does not know: crypto/ed25519 checks it.
const algEd25519 = "Ed25519"

func (j *JWS) verify(payload []byte, key any) bool {
	operations.Add(1)
	if j.Alg != algEd25519 {
		return j.obj.DetachedVerify(payload, key) == nil
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return false
	}
	input := make([]byte, 0, len(j.Protected)+1+base64.RawURLEncoding.EncodedLen(len(payload)))
	input = append(append(input, j.Protected...), '.')
	input = base64.RawURLEncoding.AppendEncode(input, payload)
	return ed25519.Verify(pub, input, j.Signature)
}

// algorithms are those Verify accepts through go-jose: no HMAC (a key set
// served to everyone cannot hold a secret), no "none".
var algorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512,
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.EdDSA,
}

// Algorithms returns the JWS "alg" values Verify accepts.
func Algorithms() []string {
	out := make([]string, 0, len(algorithms)+1)
	for _, a := range algorithms {
		out = append(out, string(a))
	}
	return append(out, algEd25519)
}

func supportedAlg(alg string) bool {
	return slices.Contains(algorithms, jose.SignatureAlgorithm(alg)) || alg == algEd25519
}

// maxHeaderBytes bounds a decoded protected header; real ones are under 300.
const maxHeaderBytes = 8 << 10

// ParseJWS decodes one entry of "signatures" and checks the shape A2A
// requires (ErrMalformed), not the signature. With ErrUnsupportedAlg it
// returns the JWS too, for its header parameters.
func ParseJWS(entry []byte) (*JWS, error) {
	v, err := jcs.Parse(entry, jcs.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return parseJWS(&v)
}

func parseJWS(v *jcs.Value) (*JWS, error) {
	if v.Kind != jcs.Object {
		return nil, malformed("entry is a JSON %s, not an object", v.Kind)
	}
	protected, err := b64Member(v, "protected")
	if err != nil {
		return nil, err
	}
	sig, err := b64Member(v, "signature")
	if err != nil {
		return nil, err
	}
	headerJSON, err := decodeB64(protected)
	if err != nil {
		return nil, malformed("protected: %v", err)
	}
	if len(headerJSON) > maxHeaderBytes {
		return nil, malformed("protected header is %d bytes, limit %d", len(headerJSON), maxHeaderBytes)
	}
	hdr, err := jcs.ParseObject(headerJSON, jcs.Limits{MaxDepth: 16})
	if err != nil {
		return nil, malformed("protected header: %v", err)
	}
	j := &JWS{Protected: protected}
	for _, p := range []struct {
		name     string
		dst      *string
		required bool
	}{{"alg", &j.Alg, true}, {"kid", &j.KeyID, true}, {"typ", &j.Typ, true}, {"jku", &j.JKU, false}} {
		hv, ok := hdr.Get(p.name)
		switch {
		case !ok && p.required:
			return nil, malformed("protected header has no %q (A2A requires alg, kid and typ)", p.name)
		case !ok:
		case hv.Kind != jcs.String:
			return nil, malformed("protected header %q is a JSON %s, not a string", p.name, hv.Kind)
		case hv.Str == "" && p.required:
			return nil, malformed("protected header %q is empty", p.name)
		default:
			*p.dst = hv.Str
		}
	}
	for _, name := range []string{"crit", "b64"} {
		if _, ok := hdr.Get(name); ok {
			// b64 (RFC 7797) would change the signing input.
			return nil, malformed("protected header has %q, which card signatures do not use", name)
		}
	}
	if uh, ok := v.Get("header"); ok {
		if uh.Kind != jcs.Object {
			return nil, malformed("header is a JSON %s, not an object", uh.Kind)
		}
		for _, m := range uh.Members {
			if _, dup := hdr.Get(m.Key); dup || m.Key == "crit" {
				return nil, malformed("unprotected header repeats %q", m.Key)
			}
		}
	}
	if len(sig) == 0 {
		return nil, malformed("signature is empty")
	}
	if j.Signature, err = decodeB64(sig); err != nil {
		return nil, malformed("signature: %v", err)
	}
	if !supportedAlg(j.Alg) {
		return j, fmt.Errorf("%w: %q (accepted: %v)", ErrUnsupportedAlg, j.Alg, Algorithms())
	}
	if j.Alg == algEd25519 {
		return j, nil
	}
	// go-jose verifies with its own reading of the header.
	obj, err := jose.ParseDetached(protected+".."+sig, []byte{}, algorithms)
	if err != nil {
		return nil, malformed("%v", err)
	}
	j.obj = obj
	return j, nil
}

func b64Member(v *jcs.Value, name string) (string, error) {
	m, ok := v.Get(name)
	if !ok {
		return "", malformed("no %q", name)
	}
	if m.Kind != jcs.String {
		return "", malformed("%q is a JSON %s, not a string", name, m.Kind)
	}
	if name == "protected" && m.Str == "" {
		return "", malformed("%q is empty", name)
	}
	return m.Str, nil
}

// decodeB64 decodes base64url strictly (no padding, zero trailing bits):
// go-jose verifies over a re-encoding of the header, so another spelling of
// the same bytes would verify here and not elsewhere.
func decodeB64(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, fmt.Errorf("not base64url: byte %q at %d", c, i)
		}
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64url: %v", err)
	}
	return b, nil
}

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
}
