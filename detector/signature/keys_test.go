package signature

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// RFC 7638 §3.1: the example RSA key and its SHA-256 thumbprint.
const (
	rfc7638Key        = `{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`
	rfc7638Thumbprint = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
)

func TestThumbprintRFC7638(t *testing.T) {
	set, err := ParseJWKS([]byte(`{"keys":[` + rfc7638Key + `]}`))
	if err != nil || len(set.Keys()) != 1 {
		t.Fatalf("ParseJWKS = %v, %v", set.Skipped(), err)
	}
	if got := set.Keys()[0].Thumbprint; got != rfc7638Thumbprint {
		t.Errorf("Thumbprint = %s, want %s", got, rfc7638Thumbprint)
	}
	keys, _ := set.Lookup(context.Background(), "2011-04-29", "ignored")
	if len(keys) != 1 {
		t.Errorf("Lookup(2011-04-29) = %d keys", len(keys))
	}
}

func TestParseJWKS(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	private, _ := json.Marshal(jose.JSONWebKey{Key: ec, KeyID: "private"})
	public := string(publicJWK(t, ec, "", "ec"))
	encUse, _ := json.Marshal(jose.JSONWebKey{Key: ec.Public(), KeyID: "enc", Use: "enc"})
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallJWK, _ := json.Marshal(jose.JSONWebKey{Key: small.Public(), KeyID: "rsa1024"})
	_, ed := testKey(t, "EdDSA", "ed")

	tests := []struct {
		name    string
		jwks    string
		kids    []string // usable keys, in order
		skipped int
	}{
		{"empty", `{"keys":[]}`, nil, 0},
		{"usable keys of every type", `{"keys":[` + public + `,` + rfc7638Key + `,` + string(ed) + `]}`, []string{"ec", "2011-04-29", "ed"}, 0},
		{"extra members ignored", `{"keys":[` + public + `],"x-issuer":"me"}`, []string{"ec"}, 0},
		{"symmetric key", `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"hmac"},` + public + `]}`, []string{"ec"}, 1},
		{"published private key", `{"keys":[` + string(private) + `]}`, nil, 1},
		{"encryption key", `{"keys":[` + string(encUse) + `]}`, nil, 1},
		{"RSA under 2048 bits", `{"keys":[` + string(smallJWK) + `]}`, nil, 1},
		{"unknown kty", `{"keys":[{"kty":"XYZ","kid":"x"}]}`, nil, 1},
		{"X25519", `{"keys":[{"kty":"OKP","crv":"X25519","x":"hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo","kid":"x"}]}`, nil, 1},
		{"EC point off the curve", `{"keys":[{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA","kid":"x"}]}`, nil, 1},
		{"not an object", `{"keys":["x",5,null]}`, nil, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseJWKS([]byte(tc.jwks))
			if err != nil {
				t.Fatalf("ParseJWKS: %v", err)
			}
			var kids []string
			for _, k := range set.Keys() {
				kids = append(kids, k.JWK.KeyID)
				if k.Thumbprint == "" || k.Source != "" {
					t.Errorf("key %s: thumbprint %q source %q", k.JWK.KeyID, k.Thumbprint, k.Source)
				}
			}
			if fmt.Sprint(kids) != fmt.Sprint(tc.kids) || len(set.Skipped()) != tc.skipped {
				t.Errorf("ParseJWKS = keys %v, skipped %v; want %v and %d skipped", kids, set.Skipped(), tc.kids, tc.skipped)
			}
			for _, err := range set.Skipped() {
				if !errors.Is(err, ErrUnusableKey) {
					t.Errorf("skipped error %v does not wrap ErrUnusableKey", err)
				}
			}
		})
	}
}

func TestParseJWKSInvalid(t *testing.T) {
	for _, in := range []string{``, `[]`, `{}`, `{"keys":{}}`, `{"keys":"x"}`, `{"keys":[],"keys":[]}`, `not json`} {
		if set, err := ParseJWKS([]byte(in)); !errors.Is(err, ErrInvalidJWKS) {
			t.Errorf("ParseJWKS(%q) = %v, %v; want ErrInvalidJWKS", in, set, err)
		}
	}
}

func TestParseJWKSLimit(t *testing.T) {
	keys := make([]string, MaxJWKSKeys+5)
	for i := range keys {
		keys[i] = strings.Replace(rfc7638Key, `"2011-04-29"`, fmt.Sprintf(`"k%d"`, i), 1)
	}
	set, err := ParseJWKS([]byte(`{"keys":[` + strings.Join(keys, ",") + `]}`))
	if err != nil || len(set.Keys()) != MaxJWKSKeys || len(set.Skipped()) != 1 {
		t.Errorf("ParseJWKS(%d keys) = %d keys, skipped %v, %v", len(keys), len(set.Keys()), set.Skipped(), err)
	}
}

func TestNilKeySet(t *testing.T) {
	var s *KeySet
	if k, err := s.Lookup(context.Background(), "k", ""); k != nil || err != nil || s.Keys() != nil || s.Skipped() != nil {
		t.Errorf("nil KeySet is not empty")
	}
	if k, err := (Sources{}).Lookup(context.Background(), "k", "https://x"); k != nil || err != nil {
		t.Errorf("empty Sources = %v, %v", k, err)
	}
}
