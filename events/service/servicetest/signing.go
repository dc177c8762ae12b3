package servicetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/signature"
)

// SigningKey is a P-256 key an agent signs its card with, and Pub the
// public key an operator trusts.
type SigningKey struct {
	KeyID string
	Priv  *ecdsa.PrivateKey
	Pub   signature.Key
}

// NewSigningKey generates a SigningKey named kid.
func NewSigningKey(t testing.TB, kid string) SigningKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signature.NewKey(jose.JSONWebKey{Key: priv.Public(), KeyID: kid, Use: "sig"})
	if err != nil {
		t.Fatal(err)
	}
	return SigningKey{KeyID: kid, Priv: priv, Pub: pub}
}

// Sign returns card with a signature by k added.
func (k SigningKey) Sign(t testing.TB, card string) string {
	t.Helper()
	out, err := signature.Sign([]byte(card), k.Priv, signature.SignOptions{KeyID: k.KeyID})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
