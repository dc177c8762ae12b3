package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
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

// poolKeys answers every kid of the form "e<n>" with n P-256 keys and
// "d<n>" with n Ed25519 keys (n at most maxPool), the same keys on every
// run: key i of a kid is derived from the kid and i, so that the committed
// fuzz seeds, signed with them, verify. Other kids have no key. It counts
// its lookups.
type poolKeys struct {
	mu      sync.Mutex
	keys    map[string][]Key
	lookups int
}

var pool = &poolKeys{keys: map[string][]Key{}}

// maxPool is the most keys poolKeys has for a kid: more than any limit the
// fuzz target sets, few enough that the outcome without limits stays cheap.
const maxPool = 12

// poolSigner returns the private key i of kid in the pool.
func poolSigner(kid string, i int) crypto.Signer {
	seed := sha256.Sum256([]byte(kid + "/" + strconv.Itoa(i)))
	switch kid[0] {
	case 'd':
		return ed25519.NewKeyFromSeed(seed[:])
	case 'e':
		for {
			k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), seed[:])
			if err == nil {
				return k
			}
			seed = sha256.Sum256(seed[:]) // not below the order: another
		}
	}
	panic("poolSigner: kid " + kid)
}

func (p *poolKeys) Lookup(_ context.Context, kid, _ string) ([]Key, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lookups++
	if len(kid) < 2 || kid[0] != 'd' && kid[0] != 'e' {
		return nil, nil
	}
	n, err := strconv.Atoi(kid[1:])
	if err != nil || n < 1 || n > maxPool || strconv.Itoa(n) != kid[1:] {
		return nil, nil
	}
	if keys, ok := p.keys[kid]; ok {
		return keys, nil
	}
	keys := make([]Key, n)
	for i := range keys {
		k, err := NewKey(jose.JSONWebKey{Key: poolSigner(kid, i).Public(), KeyID: kid, Use: "sig"})
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	p.keys[kid] = keys
	return keys, nil
}

func (p *poolKeys) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookups
}

// poolSigned returns card signed over form by key i of each kid, in turn.
func poolSigned(t testing.TB, card string, form Form, signers ...string) []byte {
	t.Helper()
	out := []byte(card)
	for _, s := range signers {
		var kid string
		var i int
		if _, err := fmt.Sscanf(s, "%s %d", &kid, &i); err != nil {
			t.Fatalf("signer %q: %v", s, err)
		}
		var err error
		if out, err = Sign(out, poolSigner(kid, i), SignOptions{KeyID: kid, Form: form}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// generous are limits a fuzz input cannot reach with poolKeys (at most 19
// signatures checked, × maxPool keys × 3 forms): the outcome without
// limits, to compare.
var generous = Limits{Signatures: 19, KeysPerSignature: maxPool, Operations: 19 * maxPool * 3}

// FuzzVerifyBounded: whatever the card and the limits, Verify makes at most
// Limits.Operations public-key operations (counted where they are made,
// JWS.verify) and Limits.Signatures lookups; a limit never makes a
// signature verify, nor makes one that verifies without limits anything but
// verified (the same result), over-limit or not-checked. Run it with
//
//	go test ./detector/signature/ -run '^$' -fuzz FuzzVerifyBounded -fuzztime 30s
func FuzzVerifyBounded(f *testing.F) {
	hostileCard := signaturetest.HostileCard
	for _, s := range []struct {
		card                  []byte
		sigs, keys, forms, op uint8
	}{
		{poolSigned(f, baseCard, FormSDK, "e1 0"), 0, 0, 0, 0},
		{poolSigned(f, hostileCard, FormSpec, "e2 1"), 0, 0, 0, 0},                // 6 operations
		{poolSigned(f, hostileCard, FormSpec, "e2 1"), 0, 0, 0, 5},                // over-limit
		{poolSigned(f, hostileCard, FormSpec, "d1 0", "e1 0"), 0, 0, 2, 0},        // forms
		{poolSigned(f, hostileCard, FormSpec, "e3 2"), 0, 3, 0, 9},                // keys per signature
		{poolSigned(f, baseCard, FormServed, "d4 0", "d4 1", "d4 2"), 2, 4, 1, 3}, // signatures
		{poolSigned(f, hostileCard, FormServed, "e12 0", "e12 1", "e12 11", "d2 1", "e1 0", "e1 0", "e1 0",
			"e1 0", "e1 0", "e1 0", "e1 0", "e1 0", "e1 0", "e1 0", "e1 0", "e1 0", "e1 0"), 0, 0, 0, 0},
	} {
		f.Add(s.card, s.sigs, s.keys, s.forms, s.op)
	}
	if r, err := Verify(context.Background(), poolSigned(f, baseCard, FormSDK, "e1 0"), pool); err != nil || !r[0].Verified {
		f.Fatalf("a card signed with the pool's key does not verify: %+v, %v", r, err)
	}
	f.Fuzz(func(t *testing.T, raw []byte, sigs, keysPer, forms, ops uint8) {
		lim := Limits{Signatures: int(sigs % 20), KeysPerSignature: int(keysPer % 6), Forms: int(forms % 4), Operations: int(ops % 16)}
		eff := lim.withDefaults()
		ctx := context.Background()
		var res []Result
		var err error
		lookups := pool.count()
		made := opsDuring(func() { res, err = lim.Verify(ctx, raw, pool) })
		lookups = pool.count() - lookups
		if err != nil {
			if !errors.Is(err, ErrNotCard) {
				t.Fatalf("Verify error %v is not ErrNotCard", err)
			}
			return
		}
		if made > eff.Operations || lookups > eff.Signatures {
			t.Fatalf("limits %+v: %d operations, %d lookups", eff, made, lookups)
		}
		free, err := generous.Verify(ctx, raw, pool)
		if err != nil || len(res) != min(len(free), eff.Signatures+1) {
			t.Fatalf("without limits: %d results, %v; with: %d", len(free), err, len(res))
		}
		for i, r := range res {
			u := free[i]
			switch {
			case r.Index != i && !(r.Index == -1 && r.Reason == ReasonMalformed && len(res) == 1) || r.Verified != (r.Reason == ReasonVerified):
				t.Fatalf("result %d = %+v", i, r)
			case r.Verified && r != u:
				t.Fatalf("limits %+v: result %d = %+v, without limits %+v", eff, i, r, u)
			case u.Verified && !r.Verified && r.Reason != ReasonOverLimit && r.Reason != ReasonNotChecked:
				t.Fatalf("limits %+v: result %d = %+v, yet it verifies without limits", eff, i, r)
			case !r.Verified && r.Reason != ReasonOverLimit && r.Reason != ReasonNotChecked && r.Reason != u.Reason:
				t.Fatalf("limits %+v: result %d = %+v, without limits %+v", eff, i, r, u)
			}
		}
	})
}
