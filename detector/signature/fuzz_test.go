package signature

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
)

// The committed seeds are in testdata/fuzz/<target>/; the targets also seed
// themselves below. Run one with, for example,
//
//	go test ./detector/signature/ -run '^$' -fuzz FuzzParseJWS -fuzztime 60s

// FuzzParseJWS: ParseJWS never panics, fails only with ErrMalformed or
// ErrUnsupportedAlg, and what it accepts has the header A2A requires and an
// algorithm Verify supports.
func FuzzParseJWS(f *testing.F) {
	for _, s := range []string{
		`{"protected":"eyJhbGciOiJFUzI1NiIsImtpZCI6ImsiLCJ0eXAiOiJKT1NFIn0","signature":"AQID"}`,
		`{"protected":"eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSIsImprdSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vYWdlbnQvandrcy5qc29uIn0","signature":"QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"}`,
		`{"protected":"eyJhbGciOiJub25lIiwia2lkIjoiayIsInR5cCI6IkpPU0UifQ","signature":"AQID","header":{"x":1}}`,
		`{"protected":"","signature":""}`,
		`[]`, `null`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, entry []byte) {
		j, err := ParseJWS(entry)
		switch {
		case err == nil:
			if j == nil || (j.obj == nil) != (j.Alg == algEd25519) || !supportedAlg(j.Alg) || j.KeyID == "" || j.Typ == "" || len(j.Signature) == 0 || j.Protected == "" {
				t.Fatalf("ParseJWS(%q) accepted %+v", entry, j)
			}
		case errors.Is(err, ErrUnsupportedAlg):
			if j == nil || supportedAlg(j.Alg) || j.KeyID == "" {
				t.Fatalf("ParseJWS(%q) = %+v, %v", entry, j, err)
			}
		case errors.Is(err, ErrMalformed):
			if j != nil {
				t.Fatalf("ParseJWS(%q) = %+v with %v", entry, j, err)
			}
		default:
			t.Fatalf("ParseJWS(%q) error %v wraps no sentinel", entry, err)
		}
	})
}

// FuzzCanonical: every form of any JSON object is RFC 8785 canonical, keeps
// no signatures and is a fixed point; the input is not modified.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		baseCard,
		`{"name":"Example Agent","description":"","capabilities":{"streaming":false,"pushNotifications":false,"extensions":[]},"skills":[]}`,
		`{"name":5,"description":[1,[2,null],{}],"securitySchemes":[{"apiKeySecurityScheme":{"name":"k"}}],"capabilities":{"extensions":[{"params":{"__proto__":{},"a":["",null]}}]}}`,
	} {
		f.Add([]byte(s))
	}
	g := newCardGen(3)
	for range 20 {
		f.Add(g.card())
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := jcs.ParseObject(raw, jcs.Limits{})
		if err != nil {
			return
		}
		before := jcs.Append(nil, &v)
		for _, form := range Forms() {
			checkCanonical(t, raw, form)
			AppendCanonical(nil, &v, form)
		}
		if after := jcs.Append(nil, &v); string(after) != string(before) {
			t.Fatal("AppendCanonical modified the card")
		}
	})
}

// FuzzVerify: Verify never panics, fails only for bytes that are not a card,
// and returns one result per signature with a known reason.
func FuzzVerify(f *testing.F) {
	signed, jwk := mustSign(f, []byte(baseCard), "EdDSA", "fuzz", SignOptions{JKU: "https://agent.example/jwks.json"})
	set := keySet(f, jwk)
	f.Add(signed)
	f.Add(withSignatures(baseCard, `[{"protected":"eyJhbGciOiJFZERTQSIsImtpZCI6ImZ1enoiLCJ0eXAiOiJKT1NFIn0","signature":"AQID"}]`))
	f.Add([]byte(`{"signatures":"x"}`))
	known := map[Reason]bool{}
	for _, r := range Reasons() {
		known[r] = true
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := Verify(context.Background(), raw, set)
		if err != nil {
			if !errors.Is(err, ErrNotCard) {
				t.Fatalf("Verify error %v is not ErrNotCard", err)
			}
			return
		}
		for _, r := range res {
			if !known[r.Reason] || r.Verified != (r.Reason == ReasonVerified) || (r.Verified && (r.Form == "" || r.Thumbprint == "")) {
				t.Fatalf("Verify(%q) = %+v", raw, r)
			}
			if r.Verified && !strings.Contains(string(raw), "signatures") {
				t.Fatalf("verified without signatures: %q", raw)
			}
		}
	})
}
