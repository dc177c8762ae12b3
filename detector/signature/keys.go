package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Source says where a key came from.
type Source string

const (
	SourceTrusted Source = "trusted" // a key set the operator configured
	// SourceJKU: fetched from a signature's jku; it proves who controls that
	// URL, not who the operator trusts.
	SourceJKU Source = "jku"
)

// Key is a public key that can verify card signatures.
type Key struct {
	// JWK.Key is an *ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey.
	JWK jose.JSONWebKey
	// Thumbprint is the RFC 7638 SHA-256 thumbprint, base64url: the key
	// whatever its kid.
	Thumbprint string
	Source     Source // "" from a KeySet used on its own
}

// minRSABits is the smallest RSA modulus accepted (RFC 7518 §3.3).
const minRSABits = 2048

// NewKey checks that jwk can verify signatures and computes its thumbprint;
// else an error wrapping ErrUnusableKey (symmetric, private, "use" not "sig",
// RSA under 2048 bits, unknown type).
func NewKey(jwk jose.JSONWebKey) (Key, error) {
	unusable := func(format string, a ...any) (Key, error) {
		return Key{}, fmt.Errorf("%w: kid %q: "+format, append([]any{ErrUnusableKey, jwk.KeyID}, a...)...)
	}
	switch k := jwk.Key.(type) {
	case *ecdsa.PublicKey:
		if _, ok := curveAlg[k.Curve]; !ok {
			return unusable("unsupported curve")
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return unusable("RSA modulus of %d bits, at least %d needed", k.N.BitLen(), minRSABits)
		}
	case ed25519.PublicKey:
	case *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey:
		return unusable("a private key, published: it authenticates nothing")
	case []byte:
		return unusable("a symmetric key")
	default:
		return unusable("key type %T", jwk.Key)
	}
	if jwk.Use != "" && jwk.Use != "sig" {
		return unusable("use %q, not \"sig\"", jwk.Use)
	}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return unusable("thumbprint: %v", err)
	}
	return Key{JWK: jwk, Thumbprint: base64.RawURLEncoding.EncodeToString(tp)}, nil
}

var curveAlg = map[elliptic.Curve]string{
	elliptic.P256(): "ES256",
	elliptic.P384(): "ES384",
	elliptic.P521(): "ES512",
}

// fits returns why k cannot verify a signature made with alg, or nil.
func (k Key) fits(alg string) error {
	if k.JWK.Algorithm != "" && k.JWK.Algorithm != alg && !(eddsa(k.JWK.Algorithm) && eddsa(alg)) {
		return fmt.Errorf("key %s is for %s, the signature is %s", k.Thumbprint, k.JWK.Algorithm, alg)
	}
	var want string
	switch key := k.JWK.Key.(type) {
	case *ecdsa.PublicKey:
		if curveAlg[key.Curve] == alg {
			return nil
		}
		want = "an EC key on " + key.Curve.Params().Name
	case *rsa.PublicKey:
		switch alg {
		case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
			return nil
		}
		want = "an RSA key"
	case ed25519.PublicKey:
		if eddsa(alg) {
			return nil
		}
		want = "an Ed25519 key"
	default:
		want = fmt.Sprintf("a %T", key)
	}
	return fmt.Errorf("key %s is %s, which cannot verify %s", k.Thumbprint, want, alg)
}

// eddsa: "EdDSA" (RFC 8037) or "Ed25519" (RFC 9864).
func eddsa(alg string) bool { return alg == "EdDSA" || alg == algEd25519 }

// Keys finds the keys that may have made a signature. Implementations must
// be safe for concurrent use.
type Keys interface {
	// Lookup returns the keys with id kid, for a signature naming jku (or
	// ""); none is (nil, nil). An error means the keys could not be obtained
	// (ReasonKeysUnavailable). It must return when ctx is done.
	Lookup(ctx context.Context, kid, jku string) ([]Key, error)
}

// KeySet is a static set of keys, such as a JWKS file; it ignores jku. Nil is
// empty. Safe for concurrent use.
type KeySet struct {
	keys    []Key
	skipped []error
}

// MaxJWKSKeys is how many keys ParseJWKS reads from one set.
const MaxJWKSKeys = 100

// ParseJWKS reads a JSON Web Key Set (RFC 7517 §5), or fails with
// ErrInvalidJWKS. Unusable keys are skipped (KeySet.Skipped).
func ParseJWKS(b []byte) (*KeySet, error) {
	v, err := jcs.ParseObject(b, jcs.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJWKS, err)
	}
	keys, ok := v.Get("keys")
	if !ok || keys.Kind != jcs.Array {
		return nil, fmt.Errorf("%w: no \"keys\" array", ErrInvalidJWKS)
	}
	s := &KeySet{}
	for i := range keys.Elems {
		if i == MaxJWKSKeys {
			s.skipped = append(s.skipped, fmt.Errorf("%w: keys %d to %d: over the limit of %d keys per set",
				ErrUnusableKey, i, len(keys.Elems)-1, MaxJWKSKeys))
			break
		}
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(jcs.Append(nil, &keys.Elems[i])); err != nil {
			s.skipped = append(s.skipped, fmt.Errorf("%w: key %d: %v", ErrUnusableKey, i, err))
			continue
		}
		k, err := NewKey(jwk)
		if err != nil {
			s.skipped = append(s.skipped, fmt.Errorf("key %d: %w", i, err))
			continue
		}
		s.keys = append(s.keys, k)
	}
	return s, nil
}

func NewKeySet(keys ...Key) *KeySet { return &KeySet{keys: append([]Key(nil), keys...)} }

// Lookup returns the keys whose kid is kid; it never fails.
func (s *KeySet) Lookup(_ context.Context, kid, _ string) ([]Key, error) {
	if s == nil {
		return nil, nil
	}
	var out []Key
	for _, k := range s.keys {
		if k.JWK.KeyID == kid {
			out = append(out, k)
		}
	}
	return out, nil
}

func (s *KeySet) Keys() []Key {
	if s == nil {
		return nil
	}
	return append([]Key(nil), s.keys...)
}

// Skipped says why each key ParseJWKS left out was (ErrUnusableKey).
func (s *KeySet) Skipped() []error {
	if s == nil {
		return nil
	}
	return append([]error(nil), s.skipped...)
}

// Sources looks keys up in the trusted set first, then the set a signature
// names in its jku: a kid the trusted set holds is answered by it alone (a
// signature cannot bring its own key for it). Keys are marked with their
// Source; nil fields are skipped. Safe for concurrent use if its fields are.
type Sources struct {
	Trusted Keys
	JKU     Keys
	// AllowJKU, if set, decides which jku URLs JKU is asked about (else
	// ErrJKURefused).
	AllowJKU func(jku string) bool
}

// Lookup fails only when no key was found and a source that could have held
// one failed or was refused.
func (s Sources) Lookup(ctx context.Context, kid, jku string) ([]Key, error) {
	var errs []error
	if s.Trusted != nil {
		keys, err := s.Trusted.Lookup(ctx, kid, jku)
		if len(keys) > 0 {
			return stamp(keys, SourceTrusted), nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("trusted keys: %w", err))
		}
	}
	switch {
	case s.JKU == nil || jku == "":
	case s.AllowJKU != nil && !s.AllowJKU(jku):
		errs = append(errs, fmt.Errorf("%w: %s", ErrJKURefused, jku))
	default:
		keys, err := s.JKU.Lookup(ctx, kid, jku)
		if len(keys) > 0 {
			return stamp(keys, SourceJKU), nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("jku %s: %w", jku, err))
		}
	}
	return nil, errors.Join(errs...)
}

func stamp(keys []Key, src Source) []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		k.Source = src
		out[i] = k
	}
	return out
}
