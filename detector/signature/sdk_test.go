package signature

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs/jcstest"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
)

// The tests here run @a2a-js/sdk 1.3.0 through node, from test/interop (where
// package.json pins it): canonicalizeAgentCard is the reference for FormSDK,
// generateAgentCardSignature signs cards Go must verify, and
// verifyAgentCardSignature checks cards Go signed. Without node or
// test/interop/node_modules they skip, or fail when CI is set.

const interopDir = "../../test/interop"

// sdkScript answers one request read from stdin (see sdkRequest) with one
// sdkResponse on stdout. The SDK's verifier logs each failed entry with
// console.debug, which would corrupt stdout: it is silenced.
const sdkScript = `
import { canonicalizeAgentCard, generateAgentCardSignature, verifyAgentCardSignature } from '@a2a-js/sdk';
import * as jose from 'jose';
console.debug = () => {};
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const out = { canonical: [], signed: [], verified: [] };
for (const c of req.canonicalize ?? []) {
  try { out.canonical.push({ ok: canonicalizeAgentCard(c) }); } catch (e) { out.canonical.push({ error: String(e) }); }
}
for (const s of req.sign ?? []) {
  const { publicKey, privateKey } = await jose.generateKeyPair(s.alg, { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: s.kid, alg: s.alg, use: 'sig' };
  const hdr = { alg: s.alg, typ: 'JOSE', kid: s.kid };
  if (s.jku) hdr.jku = s.jku;
  const card = await generateAgentCardSignature(privateKey, hdr, s.header)(s.card);
  out.signed.push({ card, jwk });
}
for (const v of req.verify ?? []) {
  const verify = verifyAgentCardSignature(async (kid) => {
    const k = v.jwks.keys.find((k) => k.kid === kid);
    if (!k) throw new Error('no key ' + kid);
    return k;
  });
  try { await verify(v.card); out.verified.push(true); } catch { out.verified.push(false); }
}
process.stdout.write(JSON.stringify(out));
`

type sdkRequest struct {
	Canonicalize []json.RawMessage `json:"canonicalize,omitempty"`
	Sign         []sdkSign         `json:"sign,omitempty"`
	Verify       []sdkVerify       `json:"verify,omitempty"`
}

type sdkSign struct {
	Alg    string          `json:"alg"`
	KeyID  string          `json:"kid"`
	JKU    string          `json:"jku,omitempty"`
	Header map[string]any  `json:"header,omitempty"`
	Card   json.RawMessage `json:"card"`
}

type sdkVerify struct {
	Card json.RawMessage `json:"card"`
	JWKS json.RawMessage `json:"jwks"`
}

type sdkResponse struct {
	Canonical []struct {
		OK    *string `json:"ok"`
		Error string  `json:"error"`
	} `json:"canonical"`
	Signed []struct {
		Card json.RawMessage `json:"card"`
		JWK  json.RawMessage `json:"jwk"`
	} `json:"signed"`
	Verified []bool `json:"verified"`
}

// runSDK runs sdkScript on req.
func runSDK(t testing.TB, req sdkRequest) sdkResponse {
	t.Helper()
	node := signaturetest.SDKNode(t, interopDir)
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*60e9)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", sdkScript)
	cmd.Dir = interopDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var resp sdkResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("node answered %q: %v", out, err)
	}
	return resp
}

// TestSDKCanonical compares FormSDK with canonicalizeAgentCard on the fixture
// cards, the vectors' cards and 400 generated ones (every field under either
// name, values of every JSON kind, empties, unknown members).
func TestSDKCanonical(t *testing.T) {
	cards := fixtureCards(t)
	for _, s := range []string{
		`{"name":"Example Agent","description":"","capabilities":{"streaming":false,"pushNotifications":false,"extensions":[]},"skills":[]}`,
		string(jcstest.ReadFile(t, "testdata/cards/jssdk-v1.0.json")),
		string(jcstest.ReadFile(t, "testdata/cards/a2ago-v1.0.json")),
	} {
		cards = append(cards, []byte(s))
	}
	g := newCardGen(1)
	for range 400 {
		cards = append(cards, g.card())
	}
	// Where canonicalizeAgentCard throws (null where a message is due), the
	// SDK can neither sign nor verify; FormSDK reads an empty message.
	throws := map[string]string{
		`{"name":"a","skills":[null]}`:                                                `{"name":"a"}`,
		`{"name":"a","securitySchemes":{"s":null}}`:                                   `{"name":"a"}`,
		`{"name":"a","capabilities":{"extensions":[null]}}`:                           `{"name":"a"}`,
		`{"name":"a","securityRequirements":[null,{"schemes":{"s":{"list":["r"]}}}]}`: `{"name":"a","securityRequirements":[{"schemes":{"s":{"list":["r"]}}}]}`,
	}
	var throwing []string
	for c := range throws {
		throwing = append(throwing, c)
	}
	req := sdkRequest{}
	for _, c := range append(cards, toBytes(throwing)...) {
		req.Canonicalize = append(req.Canonicalize, c)
	}
	resp := runSDK(t, req)
	if len(resp.Canonical) != len(cards)+len(throwing) {
		t.Fatalf("node answered %d cards, want %d", len(resp.Canonical), len(cards)+len(throwing))
	}
	for i, c := range throwing {
		r := resp.Canonical[len(cards)+i]
		got, err := Canonical([]byte(c), FormSDK)
		if r.OK != nil || err != nil || string(got) != throws[c] {
			t.Errorf("%s: canonicalizeAgentCard threw %q (want it to throw); Canonical = %s, %v; want %s", c, r.Error, got, err, throws[c])
		}
	}
	for i, c := range cards {
		r := resp.Canonical[i]
		if r.OK == nil {
			t.Errorf("card %d: canonicalizeAgentCard threw %s\n%s", i, r.Error, c)
			continue
		}
		got, err := Canonical(c, FormSDK)
		if err != nil || string(got) != *r.OK {
			t.Errorf("card %d: Canonical(sdk) =\n%s, %v\ncanonicalizeAgentCard =\n%s\ncard: %s", i, got, err, *r.OK, c)
		}
	}
}

// TestSDKSignatures: cards signed by generateAgentCardSignature, one per
// algorithm, verify in Go (and fail once tampered with); cards signed by Sign
// verify with verifyAgentCardSignature.
func TestSDKSignatures(t *testing.T) {
	card := jcstest.ReadFile(t, "testdata/cards/jssdk-v1.0.json")
	algs := []string{"ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA", "Ed25519"}

	goSigned := map[string][]byte{} // alg -> card signed in Go
	goJWKS := map[string][]byte{}
	for _, alg := range algs {
		key, jwk := testKey(t, alg, "go-"+alg)
		signed, err := Sign(card, key, SignOptions{KeyID: "go-" + alg, Alg: alg, JKU: "https://agent.example/jwks.json"})
		if err != nil {
			t.Fatal(err)
		}
		goSigned[alg], goJWKS[alg] = signed, jwksOf(t, jwk)
	}
	tampered := bytes.Replace(goSigned["ES256"], []byte(`"version":"1.4.0"`), []byte(`"version":"1.4.1"`), 1)

	req := sdkRequest{}
	for _, alg := range algs {
		req.Sign = append(req.Sign, sdkSign{Alg: alg, KeyID: "sdk-" + alg, JKU: "https://agent.example/jwks.json", Card: card})
		req.Verify = append(req.Verify, sdkVerify{Card: goSigned[alg], JWKS: goJWKS[alg]})
	}
	req.Sign = append(req.Sign, sdkSign{Alg: "ES256", KeyID: "sdk-unprotected", Header: map[string]any{"x-note": "unprotected"}, Card: card})
	req.Verify = append(req.Verify, sdkVerify{Card: tampered, JWKS: goJWKS["ES256"]})
	resp := runSDK(t, req)
	if len(resp.Signed) != len(req.Sign) || len(resp.Verified) != len(req.Verify) {
		t.Fatalf("node answered %d signed and %d verified, want %d and %d", len(resp.Signed), len(resp.Verified), len(req.Sign), len(req.Verify))
	}

	for i, alg := range algs {
		if !resp.Verified[i] {
			t.Errorf("verifyAgentCardSignature rejected the card signed in Go with %s", alg)
		}
	}
	if resp.Verified[len(algs)] {
		t.Errorf("verifyAgentCardSignature accepted a card tampered with after signing in Go")
	}

	for i, s := range resp.Signed {
		name := req.Sign[i].KeyID
		t.Run(name, func(t *testing.T) {
			set, err := ParseJWKS(jwksOf(t, s.JWK))
			if err != nil || len(set.Keys()) != 1 {
				t.Fatalf("ParseJWKS(%s) = %v, %v", s.JWK, set.Skipped(), err)
			}
			res, err := Verify(context.Background(), s.Card, set)
			if err != nil || len(res) != 1 {
				t.Fatalf("Verify = %+v, %v", res, err)
			}
			r := res[0]
			if !r.Verified || r.Form != FormSDK || r.KeyID != name || r.Alg != req.Sign[i].Alg || r.Typ != "JOSE" ||
				r.JKU != req.Sign[i].JKU || r.Thumbprint != set.Keys()[0].Thumbprint {
				t.Errorf("Verify = %+v; want verified over the sdk form by %s", r, set.Keys()[0].Thumbprint)
			}
			// Tampered: a field the SDK form covers, changed after signing.
			bad := bytes.Replace(s.Card, []byte(`"version":"1.4.0"`), []byte(`"version":"1.4.1"`), 1)
			res, err = Verify(context.Background(), bad, set)
			if err != nil || res[0].Verified || res[0].Reason != ReasonInvalidSignature {
				t.Errorf("Verify(tampered) = %+v, %v; want invalid-signature", res, err)
			}
			// The SDK form does not cover security schemes in the shape the
			// SDK serves them: a change there still verifies.
			moved := bytes.Replace(s.Card, []byte(`https://auth.example.com/oauth/token`), []byte(`https://evil.example/token`), 1)
			if bytes.Equal(moved, s.Card) {
				t.Fatal("the served card has no token URL to move")
			}
			res, err = Verify(context.Background(), moved, set)
			if err != nil || !res[0].Verified {
				t.Errorf("Verify(token URL moved) = %+v, %v; the SDK form does not cover it", res, err)
			}
		})
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func jwksOf(t testing.TB, jwks ...json.RawMessage) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": append([]json.RawMessage{}, jwks...)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
