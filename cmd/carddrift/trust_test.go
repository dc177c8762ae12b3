package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/store/fetcher"
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

// writeFile writes body to name in dir and returns its path.
func writeFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readIn returns parseTrust's reader of files in dir.
func readIn(dir string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) { return readBounded(filepath.Join(dir, p), maxJWKSFileBytes) }
}

// TestParseTrust: the --trust format, origins in normal form, and a typed
// error (*trustError wrapping its cause) for every kind of bad input.
func TestParseTrust(t *testing.T) {
	_, jwks, tp := signedFixture(t, "")
	dir := t.TempDir()
	writeFile(t, dir, "keys/ledger.json", string(jwks))
	writeFile(t, dir, "secret.json", `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"s"}]}`)
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	inline := string(set.Keys[0])

	good := `{
	  "https://Ledger.example:443/": {"jwks": "keys/ledger.json"},
	  "https://maps.example:8443":   {"jwks": "https://maps.example/.well-known/jwks.json"},
	  "http://127.0.0.1:41241":      {"keys": [` + inline + `]},
	  "http://[::1]:80":             {"keys": [` + inline + `, {"kty":"oct","k":"c2VjcmV0","kid":"s"}]}
	}`
	got, skipped, err := parseTrust([]byte(good), readIn(dir))
	if err != nil {
		t.Fatalf("parseTrust = %v", err)
	}
	if len(got) != 4 || len(skipped) != 1 {
		t.Fatalf("parseTrust = %d origins %v, skipped %v; want 4 origins, 1 key skipped", len(got), got, skipped)
	}
	for _, origin := range []string{"https://ledger.example", "http://127.0.0.1:41241", "http://[::1]"} {
		k, ok := got[origin]
		if !ok || k.Keys == nil || k.URL != "" {
			t.Errorf("parseTrust: %s = %+v, %v; want a static key set", origin, k, ok)
			continue
		}
		keys, err := k.Keys.Lookup(context.Background(), "k1", "")
		if err != nil || len(keys) != 1 || keys[0].Thumbprint != tp {
			t.Errorf("parseTrust: %s: kid k1 = %+v, %v; want the key %s", origin, keys, err, tp)
		}
	}
	if k := got["https://maps.example:8443"]; k.URL != "https://maps.example/.well-known/jwks.json" || k.Keys != nil {
		t.Errorf("parseTrust: maps = %+v, want the URL", k)
	}
	if got, _, err := parseTrust([]byte(`{}`), readIn(dir)); err != nil || len(got) != 0 {
		t.Errorf("parseTrust({}) = %v, %v; want no origin", got, err)
	}

	many := &strings.Builder{}
	many.WriteString("{")
	for i := range maxTrustOrigins + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(many, `"https://a%d.example":{"jwks":"https://k.example/j"}`, i)
	}
	many.WriteString("}")

	for _, tc := range []struct {
		name, file, origin string
		want               error
	}{
		{name: "not JSON", file: `{"https://a.example":`, want: errTrustSyntax},
		{name: "an array", file: `[]`, want: errTrustSyntax},
		{name: "duplicate key", file: `{"https://a.example":{"jwks":"x"},"https://a.example":{"jwks":"y"}}`, want: errTrustSyntax},
		{name: "one origin twice", file: `{"https://a.example":{"jwks":"https://k/j"},"HTTPS://A.example:443":{"jwks":"https://k/j"}}`,
			origin: "HTTPS://A.example:443", want: errTrustDuplicate},
		{name: "a path", file: `{"https://a.example/agent":{"jwks":"https://k/j"}}`, origin: "https://a.example/agent", want: fetcher.ErrNotOrigin},
		{name: "a query", file: `{"https://a.example?x=1":{"jwks":"https://k/j"}}`, origin: "https://a.example?x=1", want: fetcher.ErrNotOrigin},
		{name: "user info", file: `{"https://u:p@a.example":{"jwks":"https://k/j"}}`, origin: "https://u:p@a.example", want: fetcher.ErrNotOrigin},
		{name: "not http", file: `{"ftp://a.example":{"jwks":"https://k/j"}}`, origin: "ftp://a.example", want: fetcher.ErrNotOrigin},
		{name: "no scheme", file: `{"a.example":{"jwks":"https://k/j"}}`, origin: "a.example", want: fetcher.ErrNotOrigin},
		{name: "entry not an object", file: `{"https://a.example":"keys.json"}`, origin: "https://a.example", want: errTrustEntry},
		{name: "two members", file: `{"https://a.example":{"jwks":"https://k/j","keys":[]}}`, origin: "https://a.example", want: errTrustEntry},
		{name: "unknown member", file: `{"https://a.example":{"jwk":"keys/ledger.json"}}`, origin: "https://a.example", want: errTrustEntry},
		{name: "empty jwks", file: `{"https://a.example":{"jwks":""}}`, origin: "https://a.example", want: errTrustEntry},
		{name: "keys not an array", file: `{"https://a.example":{"keys":{}}}`, origin: "https://a.example", want: errTrustEntry},
		{name: "no usable key inline", file: `{"https://a.example":{"keys":[]}}`, origin: "https://a.example", want: errTrustNoKeys},
		{name: "no usable key in the file", file: `{"https://a.example":{"jwks":"secret.json"}}`, origin: "https://a.example", want: errTrustNoKeys},
		{name: "a file that is not there", file: `{"https://a.example":{"jwks":"none.json"}}`, origin: "https://a.example", want: os.ErrNotExist},
		{name: "a jwks URL without a host", file: `{"https://a.example":{"jwks":"https://"}}`, origin: "https://a.example", want: fetcher.ReasonInvalidURL},
		{name: "too many origins", file: many.String(), want: errTrustTooLarge},
		{name: "too large", file: `{"https://a.example":{"jwks":"` + strings.Repeat("x", maxTrustFileBytes) + `"}}`, want: errTrustTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parseTrust([]byte(tc.file), readIn(dir))
			var te *trustError
			if !errors.As(err, &te) || !errors.Is(err, tc.want) || te.Origin != tc.origin {
				t.Fatalf("parseTrust = %v, %v; want a *trustError for %q wrapping %v", got, err, tc.origin, tc.want)
			}
		})
	}
}

// FuzzTrustFile: parseTrust never panics, fails only with a *trustError,
// and what it accepts is origins in normal form, each with keys.
func FuzzTrustFile(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"https://agent.example":{"jwks":"https://agent.example/jwks.json"}}`,
		`{"http://127.0.0.1:41241":{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}}`,
		`{"https://A.example:443/":{"jwks":"keys.json"}}`,
		`{"https://a.example":{"jwks":"keys.json"},"https://a.example:443":{"jwks":"keys.json"}}`,
		`{"https://a.example/x":{"jwks":"k"}}`,
		`[1,2]`,
	} {
		f.Add([]byte(s))
	}
	jwks := []byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`)
	read := func(p string) ([]byte, error) {
		if p == "keys.json" {
			return jwks, nil
		}
		return nil, os.ErrNotExist
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := parseTrust(b, read)
		if err != nil {
			var te *trustError
			if !errors.As(err, &te) || got != nil {
				t.Fatalf("parseTrust = %v, %v; want nil and a *trustError", got, err)
			}
			return
		}
		for origin, k := range got {
			if n, err := fetcher.ParseOrigin(origin); err != nil || n != origin {
				t.Errorf("origin %q is not in normal form (%q, %v)", origin, n, err)
			}
			if k.Keys == nil && k.URL == "" {
				t.Errorf("origin %q has no keys", origin)
			}
		}
		fe, err := fetcher.New(fetcher.Options{Signatures: fetcher.SignatureOptions{Scoped: got}})
		if err != nil {
			t.Fatalf("fetcher.New = %v for what parseTrust accepted", err)
		}
		fe.Close()
	})
}

// TestPinTrust: pin --trust trusts a key for the agent it is scoped to, a
// jku key is the signer's claim, and keys scoped to another agent or a card
// read from a file are not trusted.
func TestPinTrust(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: priv.Public(), KeyID: "k1", Use: "sig"}
	jwks, err := json.Marshal(map[string]any{"keys": []jose.JSONWebKey{jwk}})
	if err != nil {
		t.Fatal(err)
	}
	var signed []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jwks.json":
			w.Header().Set("Content-Type", "application/jwk-set+json")
			w.Write(jwks)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write(signed)
		}
	}))
	defer srv.Close()
	if signed, err = signature.Sign([]byte(cardT0), priv, signature.SignOptions{KeyID: "k1", JKU: srv.URL + "/jwks.json"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "agent.json", string(jwks))
	mine := writeFile(t, dir, "trust.json", fmt.Sprintf(`{%q: {"jwks": "agent.json"}}`, srv.URL+"/"))
	byURL := writeFile(t, dir, "trust-url.json", fmt.Sprintf(`{%q: {"jwks": %q}}`, srv.URL, srv.URL+"/jwks.json"))
	other := writeFile(t, dir, "other.json", `{"https://other.example": {"jwks": "agent.json"}}`)
	file := writeCard(t, string(signed))
	for _, tc := range []struct {
		name           string
		args           []string
		source, reason string
	}{
		{name: "scoped to the agent", args: []string{"--trust", mine, srv.URL}, source: "trusted", reason: "verified"},
		{name: "scoped by URL", args: []string{"--trust", byURL, srv.URL}, source: "trusted", reason: "verified"},
		{name: "scoped to another agent", args: []string{"--trust", other, "--jku", "off", srv.URL}, reason: "no-key"},
		{name: "the jku's key: a claim", args: []string{"--trust", other, "--jku", "any", srv.URL}, source: "jku", reason: "verified"},
		{name: "a file has no agent", args: []string{"--trust", mine, "--jku", "off", file}, reason: "no-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"pin", "--json", "--fetch-allow", "127.0.0.0/8"}, tc.args...)
			code, out, errOut := runCLI(t, "", args...)
			if code != exitOK {
				t.Fatalf("%v = %d: %s", args, code, errOut)
			}
			var got struct {
				Signatures []detector.Signature `json:"signatures"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Signatures) != 1 {
				t.Fatalf("pin --json: %+v, %v\n%s", got.Signatures, err, out)
			}
			if s := got.Signatures[0]; s.Source != tc.source || s.Reason != tc.reason {
				t.Errorf("signature %+v, want %s from %q", s, tc.reason, tc.source)
			}
		})
	}
	for _, args := range [][]string{
		{"pin", "--trust", filepath.Join(dir, "none.json"), file},
		{"pin", "--trust", writeFile(t, dir, "bad.json", `{"https://a.example/path": {"jwks": "agent.json"}}`), file},
		{"pin", "--trust", writeFile(t, dir, "missing.json", `{"https://a.example": {"jwks": "gone.json"}}`), file},
	} {
		code, _, errOut := runCLI(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "--trust") {
			t.Errorf("%v = %d, want %d (usage) naming --trust: %s", args, code, exitUsage, errOut)
		}
	}
}
