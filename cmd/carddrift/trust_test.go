package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
)

// signedFixture signs cardT0 with a fresh P-256 key (kid "k1", jku when
// set) and returns the signed card's path and its key set.
func signedFixture(t *testing.T, jku string) (card string, jwks []byte, thumbprint string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signature.Sign([]byte(cardT0), priv, signature.SignOptions{KeyID: "k1", JKU: jku})
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: priv.Public(), KeyID: "k1", Use: "sig"}
	if jwks, err = json.Marshal(map[string]any{"keys": []jose.JSONWebKey{jwk}}); err != nil {
		t.Fatal(err)
	}
	k, err := signature.NewKey(jwk)
	if err != nil {
		t.Fatal(err)
	}
	return writeCard(t, string(signed)), jwks, k.Thumbprint
}

// TestPinSignatures: pin --json reports signatures[{kid,alg,verified,reason}]
// with --jwks FILE|URL, unverified without keys, [] for an unsigned card.
func TestPinSignatures(t *testing.T) {
	card, jwks, tp := signedFixture(t, "")
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(jwks)
	}))
	defer srv.Close()
	other, _, _ := signedFixture(t, "")

	for _, tc := range []struct {
		name string
		args []string
		want []detector.Signature
	}{
		{name: "trusted file", args: []string{"--jwks", jwksFile, card},
			want: []detector.Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: tp, Source: "trusted", Verified: true, Reason: "verified"}}},
		{name: "trusted URL", args: []string{"--jwks", srv.URL + "/jwks.json", card},
			want: []detector.Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: tp, Source: "trusted", Verified: true, Reason: "verified"}}},
		{name: "no keys", args: []string{card},
			want: []detector.Signature{{KeyID: "k1", Alg: "ES256", Verified: false, Reason: "no-key"}}},
		{name: "another key", args: []string{"--jwks", jwksFile, other},
			want: []detector.Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: tp, Source: "trusted", Verified: false, Reason: "invalid-signature"}}},
		{name: "unsigned", args: []string{"--jwks", jwksFile, writeCard(t, cardT0)}, want: []detector.Signature{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"pin", "--json"}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("pin --json %v = %d: %s", tc.args, code, errOut)
			}
			var got struct {
				Signatures []detector.Signature `json:"signatures"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("pin --json: %v\n%s", err, out)
			}
			if got.Signatures == nil || len(got.Signatures) != len(tc.want) {
				t.Fatalf("signatures = %+v, want %+v", got.Signatures, tc.want)
			}
			for i := range tc.want {
				if got.Signatures[i] != tc.want[i] {
					t.Errorf("signatures[%d] = %+v, want %+v", i, got.Signatures[i], tc.want[i])
				}
			}
			if tc.name == "trusted file" && !strings.Contains(out, `"kid": "k1"`) {
				t.Errorf("pin --json does not name the kid as kid:\n%s", out)
			}
		})
	}

	code, out, _ := runCLI(t, "", "pin", "--jwks", jwksFile, card)
	if code != exitOK || !strings.Contains(out, `kid "k1"`) || !strings.Contains(out, "verified  key "+tp+" (trusted)") {
		t.Errorf("pin (text) = %d:\n%s", code, out)
	}

	for _, args := range [][]string{
		{"pin", "--jku", "sometimes", card},
		{"pin", "--jwks", filepath.Join(t.TempDir(), "none.json"), card},
		{"pin", "--jwks", writeCard(t, `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"s"}]}`), card},
		{"pin", "--jwks", writeCard(t, `not json`), card},
	} {
		if code, _, errOut := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("%v = %d, want %d (usage): %s", args, code, exitUsage, errOut)
		}
	}
}
