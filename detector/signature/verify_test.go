package signature

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/jcs/jcstest"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
)

var (
	keysMu   sync.Mutex
	keyCache = map[string]crypto.Signer{}
)

// testKey returns a private key for alg (one per alg and kid for the whole
// run: RSA keys are slow to make) and its public JWK with kid, alg and use.
func testKey(t testing.TB, alg, kid string) (crypto.Signer, json.RawMessage) {
	t.Helper()
	keysMu.Lock()
	defer keysMu.Unlock()
	k, ok := keyCache[alg+" "+kid]
	if !ok {
		var err error
		switch alg {
		case "ES256":
			k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		case "ES384":
			k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		case "ES512":
			k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
			k, err = rsa.GenerateKey(rand.Reader, 2048)
		case "EdDSA", "Ed25519":
			_, k, err = ed25519.GenerateKey(rand.Reader)
		default:
			t.Fatalf("testKey: alg %s", alg)
		}
		if err != nil {
			t.Fatal(err)
		}
		keyCache[alg+" "+kid] = k
	}
	return k, publicJWK(t, k, alg, kid)
}

func publicJWK(t testing.TB, k crypto.Signer, alg, kid string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKey{Key: k.Public(), KeyID: kid, Algorithm: alg, Use: "sig"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keySet(t testing.TB, jwks ...json.RawMessage) *KeySet {
	t.Helper()
	s, err := ParseJWKS(jwksOf(t, jwks...))
	if err != nil || len(s.Skipped()) > 0 {
		t.Fatalf("ParseJWKS: %v %v", err, s.Skipped())
	}
	return s
}

// baseCard is a small v1.0 card.
const baseCard = `{"name":"Ledger Clerk","description":"Reads invoices.","version":"1.4.0",
 "supportedInterfaces":[{"url":"https://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
 "capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{"id":"summarize","name":"Summarise","description":"Summaries.","tags":["invoice"]}]}`

func mustSign(t testing.TB, card []byte, alg, kid string, opts SignOptions) ([]byte, json.RawMessage) {
	t.Helper()
	key, jwk := testKey(t, alg, kid)
	opts.KeyID, opts.Alg = kid, alg
	signed, err := Sign(card, key, opts)
	if err != nil {
		t.Fatalf("Sign(%s): %v", alg, err)
	}
	return signed, jwk
}

func verify1(t testing.TB, card []byte, keys Keys) Result {
	t.Helper()
	res, err := Verify(context.Background(), card, keys)
	if err != nil || len(res) != 1 {
		t.Fatalf("Verify = %+v, %v; want one result", res, err)
	}
	return res[0]
}

// TestSignVerify signs a card in Go with each algorithm and each form, and
// verifies it; then tampers with it.
func TestSignVerify(t *testing.T) {
	for _, alg := range Algorithms() {
		for _, form := range Forms() {
			t.Run(alg+"/"+string(form), func(t *testing.T) {
				kid := "k-" + alg
				signed, jwk := mustSign(t, []byte(baseCard), alg, kid, SignOptions{Form: form, JKU: "https://agent.example/jwks.json"})
				set := keySet(t, jwk)
				r := verify1(t, signed, set)
				want := Result{Index: 0, KeyID: kid, Alg: alg, JKU: "https://agent.example/jwks.json", Typ: "JOSE",
					Thumbprint: set.Keys()[0].Thumbprint, Form: firstForm(t, signed, form), Verified: true, Reason: ReasonVerified}
				if r != want {
					t.Errorf("Verify =\n%+v\nwant\n%+v", r, want)
				}

				tampered := bytes.Replace(signed, []byte(`"Summaries."`), []byte(`"Summaries!"`), 1)
				r = verify1(t, tampered, set)
				if r.Verified || r.Reason != ReasonInvalidSignature || r.Thumbprint != set.Keys()[0].Thumbprint {
					t.Errorf("Verify(tampered) = %+v; want invalid-signature with the key's thumbprint", r)
				}
			})
		}
	}
}

// firstForm is the first of Forms whose payload for card is that of form:
// the one Verify reports (baseCard, normalised already, has one payload for
// the served and spec forms).
func firstForm(t testing.TB, card []byte, form Form) Form {
	t.Helper()
	want, err := Canonical(card, form)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Forms() {
		if got, _ := Canonical(card, f); bytes.Equal(got, want) {
			return f
		}
	}
	return form
}

// What a signature covers under each form: a change to a member outside the
// v1.0 schema breaks a served-form signature only.
func TestFormCoverage(t *testing.T) {
	card := []byte(strings.Replace(baseCard, `"name"`, `"url":"https://legacy.example/a2a","name"`, 1))
	for _, form := range Forms() {
		signed, jwk := mustSign(t, card, "ES256", "cover", SignOptions{Form: form})
		changed := bytes.Replace(signed, []byte(`"url":"https://legacy.example/a2a"`), []byte(`"url":"https://evil.example/a2a"`), 1)
		if bytes.Equal(changed, signed) {
			t.Fatal("no url to change")
		}
		r := verify1(t, changed, keySet(t, jwk))
		if r.Verified != (form != FormServed) {
			t.Errorf("%s signature after a v0.3 url change: %+v", form, r)
		}
	}
}

// errKeys is a key source that cannot be reached.
type errKeys struct{ err error }

func (e errKeys) Lookup(context.Context, string, string) ([]Key, error) { return nil, e.err }

// recordKeys records lookups and answers from a set.
type recordKeys struct {
	set   *KeySet
	calls []string
}

func (r *recordKeys) Lookup(ctx context.Context, kid, jku string) ([]Key, error) {
	r.calls = append(r.calls, kid+" "+jku)
	return r.set.Lookup(ctx, kid, jku)
}

func TestVerifyOutcomes(t *testing.T) {
	card := []byte(baseCard)
	signed, jwk := mustSign(t, card, "ES256", "main", SignOptions{JKU: "https://agent.example/jwks.json"})
	set := keySet(t, jwk)
	tp := set.Keys()[0].Thumbprint
	_, otherJWK := testKey(t, "ES256", "main-other") // same alg, another key
	_, rsaJWK := testKey(t, "RS256", "main-rsa")     // another key type
	otherUnderMain := bytes.Replace(otherJWK, []byte(`"main-other"`), []byte(`"main"`), 1)
	rsaUnderMain := bytes.Replace(rsaJWK, []byte(`"main-rsa"`), []byte(`"main"`), 1)
	rsaUnderMainNoAlg := []byte(strings.Replace(string(rsaUnderMain), `"alg":"RS256",`, ``, 1))
	rotated := keySet(t, otherUnderMain)

	tests := []struct {
		name   string
		card   []byte
		keys   Keys
		reason Reason
		tp     string
		source Source
	}{
		{"verified", signed, set, ReasonVerified, tp, ""},
		{"unknown kid", signed, keySet(t, otherJWK), ReasonNoKey, "", ""},
		{"no key source", signed, nil, ReasonKeysUnavailable, "", ""},
		{"key set unreachable", signed, errKeys{errors.New("fetch https://agent.example/jwks.json: timeout")}, ReasonKeysUnavailable, "", ""},
		{"another key under the same kid", signed, rotated, ReasonInvalidSignature, rotated.Keys()[0].Thumbprint, ""},
		{"a key of another type under the kid", signed, keySet(t, rsaUnderMain), ReasonInvalidSignature, keySet(t, rsaUnderMain).Keys()[0].Thumbprint, ""},
		{"a key of another type without alg", signed, keySet(t, rsaUnderMainNoAlg), ReasonInvalidSignature, keySet(t, rsaUnderMainNoAlg).Keys()[0].Thumbprint, ""},
		{"the right key among others under the kid", signed, keySet(t, rsaUnderMain, otherUnderMain, jwk), ReasonVerified, tp, ""},
		{"trusted key", signed, Sources{Trusted: set}, ReasonVerified, tp, SourceTrusted},
		{"jku key", signed, Sources{Trusted: keySet(t, otherJWK), JKU: set}, ReasonVerified, tp, SourceJKU},
		{"a trusted kid is not answered from jku", signed, Sources{Trusted: rotated, JKU: set}, ReasonInvalidSignature, rotated.Keys()[0].Thumbprint, SourceTrusted},
		{"trusted set down, jku answers", signed, Sources{Trusted: errKeys{errors.New("down")}, JKU: set}, ReasonVerified, tp, SourceJKU},
		{"trusted set down, no jku source", signed, Sources{Trusted: errKeys{errors.New("down")}}, ReasonKeysUnavailable, "", ""},
		{"jku down, kid unknown to the trusted set", signed, Sources{Trusted: keySet(t), JKU: errKeys{errors.New("down")}}, ReasonKeysUnavailable, "", ""},
		{"jku not followed", signed, Sources{Trusted: keySet(t)}, ReasonNoKey, "", ""},
		{"jku allowed", signed, Sources{JKU: set, AllowJKU: func(jku string) bool { return strings.HasPrefix(jku, "https://agent.example/") }}, ReasonVerified, tp, SourceJKU},
		{"jku refused", signed, Sources{JKU: set, AllowJKU: func(string) bool { return false }}, ReasonKeysUnavailable, "", ""},
		{"jku refused, trusted key answers", signed, Sources{Trusted: set, JKU: set, AllowJKU: func(string) bool { return false }}, ReasonVerified, tp, SourceTrusted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := verify1(t, tc.card, tc.keys)
			if r.Reason != tc.reason || r.Verified != (tc.reason == ReasonVerified) || r.Thumbprint != tc.tp || r.Source != tc.source {
				t.Errorf("Verify = %+v\nwant reason %s, thumbprint %q, source %q", r, tc.reason, tc.tp, tc.source)
			}
			if r.KeyID != "main" || r.Alg != "ES256" || r.JKU != "https://agent.example/jwks.json" || r.Detail == "" && !r.Verified {
				t.Errorf("Verify = %+v: header or detail missing", r)
			}
		})
	}
}

// entry builds a signatures entry from a protected header (JSON, encoded
// here) and a signature.
func entry(protected string, sig string, extra string) string {
	e := `{"protected":"` + base64.RawURLEncoding.EncodeToString([]byte(protected)) + `","signature":"` + sig + `"`
	if extra != "" {
		e += "," + extra
	}
	return e + "}"
}

func withSignatures(card string, sigs string) []byte {
	return []byte(strings.TrimSuffix(strings.TrimSpace(card), "}") + `,"signatures":` + sigs + `}`)
}

func TestSourcesRefusedJKU(t *testing.T) {
	s := Sources{JKU: keySet(t), AllowJKU: func(string) bool { return false }}
	if keys, err := s.Lookup(context.Background(), "k", "https://elsewhere.example/jwks"); keys != nil || !errors.Is(err, ErrJKURefused) {
		t.Errorf("Lookup = %v, %v; want ErrJKURefused", keys, err)
	}
	if keys, err := s.Lookup(context.Background(), "k", ""); keys != nil || err != nil {
		t.Errorf("Lookup without jku = %v, %v; want nothing", keys, err)
	}
}

func TestVerifyMalformed(t *testing.T) {
	sig := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{1}, 64))
	good := `{"alg":"ES256","kid":"k","typ":"JOSE"}`
	tests := []struct {
		name, sigs string
		reason     Reason
	}{
		{"signatures not an array", `{"protected":"x"}`, ReasonMalformed},
		{"entry not an object", `["x"]`, ReasonMalformed},
		{"no protected", `[{"signature":"` + sig + `"}]`, ReasonMalformed},
		{"protected not a string", `[{"protected":5,"signature":"` + sig + `"}]`, ReasonMalformed},
		{"protected not base64url", `[{"protected":"eyJ+/","signature":"` + sig + `"}]`, ReasonMalformed},
		{"protected padded", `[{"protected":"` + base64.URLEncoding.EncodeToString([]byte(good+"  ")) + `","signature":"` + sig + `"}]`, ReasonMalformed},
		{"protected with a newline", `[{"protected":"eyJhbGciOiJFUzI1NiJ9\n","signature":"` + sig + `"}]`, ReasonMalformed},
		{"protected not JSON", "[" + entry(`{alg:ES256}`, sig, "") + "]", ReasonMalformed},
		{"protected not an object", "[" + entry(`["ES256"]`, sig, "") + "]", ReasonMalformed},
		{"protected duplicate key", "[" + entry(`{"alg":"ES256","alg":"none","kid":"k","typ":"JOSE"}`, sig, "") + "]", ReasonMalformed},
		{"no alg", "[" + entry(`{"kid":"k","typ":"JOSE"}`, sig, "") + "]", ReasonMalformed},
		{"no kid", "[" + entry(`{"alg":"ES256","typ":"JOSE"}`, sig, "") + "]", ReasonMalformed},
		{"empty kid", "[" + entry(`{"alg":"ES256","kid":"","typ":"JOSE"}`, sig, "") + "]", ReasonMalformed},
		{"no typ", "[" + entry(`{"alg":"ES256","kid":"k"}`, sig, "") + "]", ReasonMalformed},
		{"kid not a string", "[" + entry(`{"alg":"ES256","kid":7,"typ":"JOSE"}`, sig, "") + "]", ReasonMalformed},
		{"jku not a string", "[" + entry(`{"alg":"ES256","kid":"k","typ":"JOSE","jku":["x"]}`, sig, "") + "]", ReasonMalformed},
		{"crit", "[" + entry(`{"alg":"ES256","kid":"k","typ":"JOSE","crit":["b64"],"b64":false}`, sig, "") + "]", ReasonMalformed},
		{"b64 without crit", "[" + entry(`{"alg":"ES256","kid":"k","typ":"JOSE","b64":false}`, sig, "") + "]", ReasonMalformed},
		{"unprotected header not an object", "[" + entry(good, sig, `"header":"x"`) + "]", ReasonMalformed},
		{"unprotected header null", "[" + entry(good, sig, `"header":null`) + "]", ReasonMalformed},
		{"unprotected header repeats kid", "[" + entry(good, sig, `"header":{"kid":"other"}`) + "]", ReasonMalformed},
		{"unprotected crit", "[" + entry(good, sig, `"header":{"crit":["x"]}`) + "]", ReasonMalformed},
		{"no signature", `[{"protected":"` + base64.RawURLEncoding.EncodeToString([]byte(good)) + `"}]`, ReasonMalformed},
		{"empty signature", "[" + entry(good, "", "") + "]", ReasonMalformed},
		{"signature not base64url", "[" + entry(good, "a+b/", "") + "]", ReasonMalformed},
		{"signature with non-zero trailing bits", "[" + entry(good, "AB", "") + "]", ReasonMalformed},
		{"go-jose refuses the header", "[" + entry(`{"alg":"ES256","kid":"k","typ":"JOSE","jwk":{"kty":"EC"}}`, sig, "") + "]", ReasonMalformed},
		{"alg none", "[" + entry(`{"alg":"none","kid":"k","typ":"JOSE"}`, sig, "") + "]", ReasonUnsupportedAlg},
		{"alg HS256", "[" + entry(`{"alg":"HS256","kid":"k","typ":"JOSE"}`, sig, "") + "]", ReasonUnsupportedAlg},
		{"alg ES256K", "[" + entry(`{"alg":"ES256K","kid":"k","typ":"JOSE"}`, sig, "") + "]", ReasonUnsupportedAlg},
		{"alg ML-DSA-44", "[" + entry(`{"alg":"ML-DSA-44","kid":"k","typ":"JOSE"}`, sig, "") + "]", ReasonUnsupportedAlg},
		{"well-formed, bad signature", "[" + entry(good, sig, `"header":{"x-note":"unprotected"}`) + "]", ReasonKeysUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Verify(context.Background(), withSignatures(baseCard, tc.sigs), nil)
			if err != nil || len(res) != 1 {
				t.Fatalf("Verify = %+v, %v", res, err)
			}
			if r := res[0]; r.Reason != tc.reason || r.Verified || r.Detail == "" {
				t.Errorf("Verify = %+v, want %s", r, tc.reason)
			}
		})
	}
}

func TestVerifyCard(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"a":1,"a":2}`, `nope`} {
		if res, err := Verify(context.Background(), []byte(in), nil); !errors.Is(err, ErrNotCard) {
			t.Errorf("Verify(%q) = %v, %v; want ErrNotCard", in, res, err)
		}
	}
	for _, sigs := range []string{``, `null`, `[]`} {
		card := []byte(baseCard)
		if sigs != "" {
			card = withSignatures(baseCard, sigs)
		}
		if res, err := Verify(context.Background(), card, nil); res != nil || err != nil {
			t.Errorf("Verify(signatures %q) = %v, %v; want nothing", sigs, res, err)
		}
	}
}

// TestRotation: two signatures during a key rotation, one per key; each is
// reported, and a key set holding only the new key verifies the second.
func TestRotation(t *testing.T) {
	once, oldJWK := mustSign(t, []byte(baseCard), "ES256", "2025", SignOptions{})
	twice, newJWK := mustSign(t, once, "EdDSA", "2026", SignOptions{})
	res, err := Verify(context.Background(), twice, keySet(t, newJWK))
	if err != nil || len(res) != 2 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	if res[0].Reason != ReasonNoKey || res[0].KeyID != "2025" || res[1].Reason != ReasonVerified || res[1].KeyID != "2026" || res[1].Index != 1 {
		t.Errorf("Verify = %+v", res)
	}
	res, _ = Verify(context.Background(), twice, keySet(t, oldJWK, newJWK))
	if !res[0].Verified || !res[1].Verified || res[0].Thumbprint == res[1].Thumbprint {
		t.Errorf("Verify with both keys = %+v", res)
	}
}

// TestMaxSignatures: signatures past the limit are not looked up (the
// budget of operations raised, so that each of the first 16 verifies).
func TestMaxSignatures(t *testing.T) {
	card := []byte(baseCard)
	var jwk json.RawMessage
	for range MaxSignatures + 2 {
		card, jwk = mustSign(t, card, "EdDSA", "many", SignOptions{})
	}
	rk := &recordKeys{set: keySet(t, jwk)}
	res, err := Limits{Operations: 3 * MaxSignatures}.Verify(context.Background(), card, rk)
	if err != nil || len(res) != MaxSignatures+1 {
		t.Fatalf("Verify: %d results, %v; want %d, the last for the entries past the limit", len(res), err, MaxSignatures+1)
	}
	for i, r := range res {
		want, kid := ReasonVerified, "many"
		if i >= MaxSignatures {
			want, kid = ReasonNotChecked, "" // not even parsed
		}
		if r.Reason != want || r.KeyID != kid || r.Index != i {
			t.Errorf("result %d = %+v, want %s", i, r, want)
		}
	}
	if len(rk.calls) != MaxSignatures {
		t.Errorf("%d lookups, want %d", len(rk.calls), MaxSignatures)
	}
}

func TestReasons(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] || r == "" || strings.ToLower(string(r)) != string(r) || strings.Contains(string(r), " ") {
			t.Errorf("reason %q: duplicate or not kebab-case", r)
		}
		seen[r] = true
	}
	if len(seen) != 8 {
		t.Errorf("%d reasons", len(seen))
	}
}

func TestSignErrors(t *testing.T) {
	key, _ := testKey(t, "ES256", "e")
	for _, tc := range []struct {
		card string
		opts SignOptions
		want error
	}{
		{`[]`, SignOptions{KeyID: "k"}, ErrNotCard},
		{baseCard, SignOptions{KeyID: "k", Form: "raw"}, ErrUnknownForm},
		{baseCard, SignOptions{}, nil},
		{baseCard, SignOptions{KeyID: "k", Alg: "RS256"}, nil},
	} {
		_, err := Sign([]byte(tc.card), key, tc.opts)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Sign(%.20s, %+v) error = %v, want %v", tc.card, tc.opts, err, tc.want)
		}
	}
	// A card whose signatures member is not an array gets a new one.
	out, err := Sign(withSignatures(baseCard, `"junk"`), key, SignOptions{KeyID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if r := verify1(t, out, nil); r.KeyID != "k" {
		t.Errorf("Sign over junk signatures: %+v", r)
	}
}

func ExampleAlgorithms() {
	fmt.Println(Algorithms())
	// Output: [ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA Ed25519]
}

// TestEdDSANames: "EdDSA" (RFC 8037) and "Ed25519" (RFC 9864, what the JS
// jose library now writes) are one algorithm: either verifies with an Ed25519
// key whose JWK names the other, and neither with another key type.
func TestEdDSANames(t *testing.T) {
	for _, alg := range []string{"EdDSA", "Ed25519"} {
		key, _ := testKey(t, alg, "ed-"+alg)
		other := "Ed25519"
		if alg == other {
			other = "EdDSA"
		}
		signed, err := Sign([]byte(baseCard), key, SignOptions{KeyID: "ed", Alg: alg})
		if err != nil {
			t.Fatal(err)
		}
		if r := verify1(t, signed, keySet(t, publicJWK(t, key, other, "ed"))); !r.Verified || r.Alg != alg {
			t.Errorf("%s signature, JWK alg %s: %+v", alg, other, r)
		}
		ec, _ := testKey(t, "ES256", "ed-ec")
		if r := verify1(t, signed, keySet(t, publicJWK(t, ec, "", "ed"))); r.Reason != ReasonInvalidSignature {
			t.Errorf("%s signature, EC key: %+v", alg, r)
		}
	}
	key, _ := testKey(t, "ES256", "ed-wrong")
	if _, err := Sign([]byte(baseCard), key, SignOptions{KeyID: "k", Alg: "Ed25519"}); err == nil {
		t.Error("Sign(Ed25519) with an EC key succeeded")
	}
}

// TestNotCheckedEntriesBounded: a card's "signatures" array may hold half a
// million entries within a 1 MiB body (",0" each). The ones past
// Limits.Signatures are one not-checked Result together, not one each: a
// Result per entry allocated about 300 MiB per verification through the
// fetcher, an outcome too large to keep (so paid again at every
// observation), and a pin of tens of MiB.
func TestNotCheckedEntriesBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(baseCard[:len(baseCard)-1])
	b.WriteString(`,"signatures":[{}`)
	for b.Len() < 1<<20-10 {
		b.WriteString(`,0`)
	}
	b.WriteString(`]}`)
	res, err := Verify(context.Background(), b.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != MaxSignatures+1 {
		t.Fatalf("%d results, want %d: the first %d entries and one for the rest", len(res), MaxSignatures+1, MaxSignatures)
	}
	if r := res[MaxSignatures]; r.Index != MaxSignatures || r.Reason != ReasonNotChecked {
		t.Errorf("the last result %+v, want entry %d on, not-checked", r, MaxSignatures)
	}
	if r := res[0]; r.Reason != ReasonMalformed {
		t.Errorf("entry 0 ({}): %+v, want malformed", r)
	}
}

// opsDuring returns how many public-key operations f made (the package's
// own count, kept in JWS.verify: independent of the verifier's bookkeeping).
// The tests of this package do not run in parallel.
func opsDuring(f func()) int {
	before := operations.Load()
	f()
	return int(operations.Load() - before)
}

// hostile builds a signaturetest card and its key set, parsed.
func hostile(t testing.TB, h signaturetest.Hostile) ([]byte, *KeySet) {
	t.Helper()
	card, jwks, err := h.Build()
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseJWKS(jwks)
	if err != nil || len(set.Skipped()) > 0 {
		t.Fatalf("ParseJWKS: %v %v", err, set.Skipped())
	}
	return card, set
}

func TestDefaultLimits(t *testing.T) {
	d := DefaultLimits()
	want := Limits{Signatures: 16, KeysPerSignature: 2, Forms: 3, Operations: 8, Time: 2 * time.Second}
	if d != want {
		t.Errorf("DefaultLimits() = %+v, want %+v", d, want)
	}
	if got := (Limits{}).withDefaults(); got != d {
		t.Errorf("Limits{} with defaults = %+v", got)
	}
	if got := (Limits{Forms: 9, Operations: -1}).withDefaults(); got.Forms != 3 || got.Operations != DefaultOperations {
		t.Errorf("Limits{Forms: 9, Operations: -1} with defaults = %+v", got)
	}
}

// TestHostileForms: the hostile card has three distinct canonical forms, so
// a verifier without limits tries each.
func TestHostileForms(t *testing.T) {
	seen := map[string]Form{}
	for _, f := range Forms() {
		c, err := Canonical([]byte(signaturetest.HostileCard), f)
		if err != nil {
			t.Fatal(err)
		}
		if g, dup := seen[string(c)]; dup {
			t.Errorf("forms %s and %s of the hostile card are the same bytes", g, f)
		}
		seen[string(c)] = f
	}
}

// TestLimitsHostile: the body of issue 19 (16 ES512 signatures, a kid naming
// 100 keys, three forms) costs no public-key operation at all, every
// signature over-limit; the dearest body within the limits (a kid naming
// two keys) costs exactly the budget.
func TestLimitsHostile(t *testing.T) {
	card, set := hostile(t, signaturetest.Hostile{Keys: 100})
	var res []Result
	var err error
	if ops := opsDuring(func() { res, err = Verify(context.Background(), card, set) }); ops != 0 || err != nil {
		t.Errorf("Verify(issue body): %d operations, %v; want 0", ops, err)
	}
	for _, r := range res {
		if r.Reason != ReasonOverLimit || r.Verified || r.Thumbprint != set.Keys()[0].Thumbprint || !strings.Contains(r.Detail, "100 keys") {
			t.Errorf("result %d = %+v; want over-limit (100 keys) with the first key's thumbprint", r.Index, r)
		}
	}
	if len(res) != 16 {
		t.Errorf("%d results, want 16", len(res))
	}

	// The operation budget, not the clock, is under test: the time backstop
	// (DefaultTime) may stop 8 ES512 operations early on a loaded machine
	// under -race, so it is lifted here (TestLimitsTime tests it).
	card, set = hostile(t, signaturetest.Hostile{Keys: 2})
	untimed := DefaultLimits()
	untimed.Time = time.Hour
	if ops := opsDuring(func() { res, err = untimed.Verify(context.Background(), card, set) }); ops != DefaultOperations || err != nil {
		t.Errorf("Verify(two keys per kid): %d operations, %v; want %d", ops, err, DefaultOperations)
	}
	for _, r := range res {
		want := ReasonOverLimit
		if r.Index == 0 { // 2 keys × 3 forms = 6 operations, all failed
			want = ReasonInvalidSignature
		}
		if r.Reason != want {
			t.Errorf("result %d = %+v; want %s", r.Index, r, want)
		}
	}
}

// TestLimitsKeysPerSignature: a kid that names more keys than the limit is
// over-limit before any operation, even when one of them would verify.
func TestLimitsKeysPerSignature(t *testing.T) {
	signed, jwk := mustSign(t, []byte(baseCard), "ES256", "main", SignOptions{})
	var under []json.RawMessage
	for _, other := range []string{"kps-1", "kps-2"} {
		_, o := testKey(t, "ES256", other)
		under = append(under, bytes.Replace(o, []byte(`"`+other+`"`), []byte(`"main"`), 1))
	}
	_, ed := testKey(t, "EdDSA", "kps-ed") // under main too, but cannot verify ES256: not counted
	under = append(under, bytes.Replace(ed, []byte(`"kps-ed"`), []byte(`"main"`), 1))

	two := keySet(t, under[0], jwk, under[2])   // the signer's key second of two that fit
	three := keySet(t, under[0], under[1], jwk) // three that fit
	for _, tc := range []struct {
		name string
		lim  Limits
		keys *KeySet
		want Reason
		ops  int
	}{
		{"two keys fit", Limits{}, two, ReasonVerified, 2},
		{"three keys fit", Limits{}, three, ReasonOverLimit, 0},
		{"three keys fit, limit 3", Limits{KeysPerSignature: 3}, three, ReasonVerified, 3},
	} {
		var res []Result
		ops := opsDuring(func() { res, _ = tc.lim.Verify(context.Background(), signed, tc.keys) })
		if len(res) != 1 || res[0].Reason != tc.want || ops != tc.ops {
			t.Errorf("%s: %+v after %d operations; want %s after %d", tc.name, res, ops, tc.want, tc.ops)
		}
	}
}

// TestLimitsForms: a signature over a form past Limits.Forms is over-limit
// when the card has more distinct forms than that; a card whose forms are
// the same bytes has one to try.
func TestLimitsForms(t *testing.T) {
	three := []byte(signaturetest.HostileCard) // three distinct forms
	for _, tc := range []struct {
		name  string
		card  []byte
		form  Form
		forms int
		want  Reason
	}{
		{"spec form, all forms", three, FormSpec, 0, ReasonVerified},
		{"spec form, two forms", three, FormSpec, 2, ReasonOverLimit},
		{"sdk form, two forms", three, FormSDK, 2, ReasonVerified},
		{"served form, one form", three, FormServed, 1, ReasonVerified},
		{"spec form, one distinct form", []byte(baseCard), FormSpec, 1, ReasonVerified},
	} {
		signed, jwk := mustSign(t, tc.card, "EdDSA", "forms", SignOptions{Form: tc.form})
		res, err := Limits{Forms: tc.forms}.Verify(context.Background(), signed, keySet(t, jwk))
		if err != nil || len(res) != 1 || res[0].Reason != tc.want {
			t.Errorf("%s: %+v, %v; want %s", tc.name, res, err, tc.want)
		}
	}
	// Tampered with: invalid over every form tried, and every form was.
	signed, jwk := mustSign(t, three, "EdDSA", "forms", SignOptions{Form: FormSpec})
	tampered := bytes.Replace(signed, []byte(`"Signed to be expensive."`), []byte(`"Signed to be cheap."`), 1)
	if r := verify1(t, tampered, keySet(t, jwk)); r.Reason != ReasonInvalidSignature {
		t.Errorf("tampered: %+v; want invalid-signature", r)
	}
}

// TestLimitsOperations: a rotation's two signatures over the spec form of a
// card with three distinct forms take six operations; with five, the second
// signature is over-limit.
func TestLimitsOperations(t *testing.T) {
	card := []byte(signaturetest.HostileCard)
	once, oldJWK := mustSign(t, card, "ES256", "ops-old", SignOptions{Form: FormSpec})
	twice, newJWK := mustSign(t, once, "ES256", "ops-new", SignOptions{Form: FormSpec})
	keys := keySet(t, oldJWK, newJWK)
	for _, tc := range []struct {
		ops  int
		want [2]Reason
		made int
	}{
		{0, [2]Reason{ReasonVerified, ReasonVerified}, 6},
		{6, [2]Reason{ReasonVerified, ReasonVerified}, 6},
		{5, [2]Reason{ReasonVerified, ReasonOverLimit}, 5},
		{1, [2]Reason{ReasonOverLimit, ReasonOverLimit}, 1},
	} {
		var res []Result
		made := opsDuring(func() { res, _ = Limits{Operations: tc.ops}.Verify(context.Background(), twice, keys) })
		if len(res) != 2 || res[0].Reason != tc.want[0] || res[1].Reason != tc.want[1] || made != tc.made {
			t.Errorf("Operations %d: %+v after %d operations; want %v after %d", tc.ops, res, made, tc.want, tc.made)
		}
	}
}

// steppingClock returns a clock that moves on by step each time it is read.
func steppingClock(step time.Duration) func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

// TestLimitsTime: once the card has taken Limits.Time (key lookups not
// counted), a signature that needs an operation is over-limit. The clock
// moves on a second per reading: start, before and after the lookup (one
// second of waiting, not counted), before the first operation.
func TestLimitsTime(t *testing.T) {
	signed, jwk := mustSign(t, []byte(baseCard), "EdDSA", "time", SignOptions{})
	keys := keySet(t, jwk)
	for _, tc := range []struct {
		limit time.Duration
		want  Reason
	}{
		{1500 * time.Millisecond, ReasonOverLimit}, // 3 s since start, 1 s of it in Lookup
		{2 * time.Second, ReasonVerified},
	} {
		res, err := Limits{Time: tc.limit}.verify(context.Background(), signed, keys, steppingClock(time.Second))
		if err != nil || len(res) != 1 || res[0].Reason != tc.want {
			t.Errorf("Time %v: %+v, %v; want %s", tc.limit, res, err, tc.want)
		}
	}
}

// cancelKeys cancels the verification's context while it looks keys up,
// and answers anyway.
type cancelKeys struct {
	recordKeys
	cancel context.CancelFunc
}

func (c *cancelKeys) Lookup(ctx context.Context, kid, jku string) ([]Key, error) {
	c.cancel()
	return c.recordKeys.Lookup(ctx, kid, jku)
}

// TestVerifyStops: once ctx is done no operation is made and no key looked
// up; the signatures left are unverified (keys-unavailable), not invalid.
func TestVerifyStops(t *testing.T) {
	once, jwk1 := mustSign(t, []byte(baseCard), "ES256", "stop-1", SignOptions{})
	twice, jwk2 := mustSign(t, once, "ES256", "stop-2", SignOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys := &cancelKeys{recordKeys: recordKeys{set: keySet(t, jwk1, jwk2)}, cancel: cancel}
	var res []Result
	if ops := opsDuring(func() { res, _ = Verify(ctx, twice, keys) }); ops != 0 {
		t.Errorf("%d operations after ctx was done", ops)
	}
	if len(keys.calls) != 1 {
		t.Errorf("lookups %v, want the first only", keys.calls)
	}
	for _, r := range res {
		if r.Reason != ReasonKeysUnavailable || !strings.Contains(r.Detail, "stopped") {
			t.Errorf("result %d = %+v; want keys-unavailable (stopped)", r.Index, r)
		}
	}
}

// TestLimitsRealCards: under the default limits every real card verifies
// as it did without them — the fixture cards and both SDK agents' cards,
// signed over each form, once and during a rotation
// (two signatures, the old key's first, over the dearest form). The cards
// the JS SDK signs itself are in TestSDKSignatures, which uses Verify too.
func TestLimitsRealCards(t *testing.T) {
	cards := append(fixtureCards(t), jcstest.ReadFile(t, "testdata/cards/jssdk-v1.0.json"),
		jcstest.ReadFile(t, "testdata/cards/a2ago-v1.0.json"), []byte(signaturetest.HostileCard))
	for i, card := range cards {
		for _, alg := range []string{"ES256", "Ed25519"} { // the count of operations is the same for every alg
			for _, form := range Forms() {
				// A fixture card may be signed already (the §8.4 example):
				// the signature added is the last.
				signed, jwk := mustSign(t, card, alg, "real-"+alg, SignOptions{Form: form})
				res, err := Verify(context.Background(), signed, keySet(t, jwk))
				if err != nil || len(res) == 0 || !res[len(res)-1].Verified {
					t.Errorf("card %d, %s over %s: %+v, %v", i, alg, form, res, err)
				}
			}
		}
		once, oldJWK := mustSign(t, card, "ES256", "real-old", SignOptions{Form: FormSpec})
		twice, newJWK := mustSign(t, once, "ES256", "real-new", SignOptions{Form: FormSpec})
		res, err := Verify(context.Background(), twice, keySet(t, oldJWK, newJWK))
		if n := len(res); err != nil || n < 2 || !res[n-2].Verified || !res[n-1].Verified {
			t.Errorf("card %d, rotation: %+v, %v", i, res, err)
		}
	}
}
