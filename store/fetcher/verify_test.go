package fetcher

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
)

func (s testSigner) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: s.key.Public(), KeyID: s.kid, Use: "sig"}
}

func thumbprint(t testing.TB, s testSigner) string {
	t.Helper()
	k, err := signature.NewKey(s.jwk())
	if err != nil {
		t.Fatal(err)
	}
	return k.Thumbprint
}

// TestObserveAgentSignatures: ObserveAgent says who signed each body it
// observes, verifying a body once however often it is observed; a card
// re-signed with the same content (the same digest) is observed with its
// new signatures, from a fetch and from the lease after it.
func TestObserveAgentSignatures(t *testing.T) {
	clk := newClock()
	a, b := newTestSigner(t, "a"), newTestSigner(t, "b")
	keys := newJWKSServer(t, jwksJSON(t, a.jwk(), b.jwk()), "max-age=600")
	card := cardJSON("1", true)
	signedA := a.sign(t, card, keys.url())
	agent := newAgent(t, signedA, `"a"`, "max-age=60")
	o := testOptions(clk)
	o.Signatures = SignatureOptions{JKU: JKUAny}
	f := newFetcher(t, o)
	cardURL := agent.url(WellKnownPath)
	ctx := context.Background()
	observe := func(what string) Observation {
		t.Helper()
		obs, err := f.ObserveAgent(ctx, agent.url("/"), "", false)
		if err != nil {
			t.Fatalf("%s: ObserveAgent = %v", what, err)
		}
		if obs.CardURL != cardURL {
			t.Fatalf("%s: card URL %s", what, obs.CardURL)
		}
		return obs
	}
	want := func(what string, obs Observation, kid string, verified bool, reason string) {
		t.Helper()
		if len(obs.Signatures) != 1 {
			t.Fatalf("%s: %d signatures, want 1: %+v", what, len(obs.Signatures), obs.Signatures)
		}
		s := obs.Signatures[0]
		if s.KeyID != kid || s.Verified != verified || s.Reason != reason || s.JKU != keys.url() || s.Alg != "ES256" {
			t.Errorf("%s: signature %+v; want kid %s verified %v (%s) with jku %s", what, s, kid, verified, reason, keys.url())
		}
	}

	first := observe("signed by a")
	want("signed by a", first, "a", true, "verified")
	if s := first.Signatures[0]; s.Thumbprint != thumbprint(t, a) || s.Source != "jku" {
		t.Errorf("signed by a: thumbprint %s source %s; want %s from the jku", s.Thumbprint, s.Source, thumbprint(t, a))
	}
	lease := observe("from the lease")
	if !lease.FromLease {
		t.Fatal("the second observation was not the lease's")
	}
	want("from the lease", lease, "a", true, "verified")
	if n := f.verify.verified.Load(); n != 1 {
		t.Errorf("one body observed twice was verified %d times, want once", n)
	}

	agent.set(b.sign(t, card, keys.url()), `"b"`, "max-age=60")
	clk.Advance(61 * time.Second)
	resigned := observe("re-signed by b")
	if resigned.Digest != first.Digest {
		t.Fatalf("re-signing changed the digest: %s, %s", first.Digest, resigned.Digest)
	}
	want("re-signed by b", resigned, "b", true, "verified")
	want("re-signed by b, from the lease", observe("re-signed by b, from the lease"), "b", true, "verified")

	tampered := bytes.Replace(b.sign(t, card, keys.url()), []byte(`"description":"test"`), []byte(`"description":"changed"`), 1)
	agent.set(tampered, `"t"`, "max-age=60")
	clk.Advance(61 * time.Second)
	bad := observe("tampered")
	want("tampered", bad, "b", false, "invalid-signature")
	if bad.Digest == first.Digest {
		t.Error("the tampered card has the signed card's digest")
	}

	before := f.verify.verified.Load()
	agent.set(card, `"u"`, "max-age=60")
	clk.Advance(61 * time.Second)
	if unsigned := observe("unsigned"); unsigned.Signatures != nil || unsigned.Digest != first.Digest {
		t.Errorf("unsigned: signatures %+v, digest %s", unsigned.Signatures, unsigned.Digest)
	}
	if n := f.verify.verified.Load(); n != before {
		t.Errorf("an unsigned card was verified (%d verifications)", n-before)
	}
	if n := keys.requests.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once (max-age=600)", n)
	}
}

// TestVerifyKeySources: which keys verify, by SignatureOptions.
func TestVerifyKeySources(t *testing.T) {
	a, b := newTestSigner(t, "a"), newTestSigner(t, "b")
	keys := newJWKSServer(t, jwksJSON(t, a.jwk(), b.jwk()), "max-age=600")
	operator := newJWKSServer(t, jwksJSON(t, a.jwk()), "max-age=600")
	fileSet, err := signature.ParseJWKS(jwksJSON(t, a.jwk()))
	if err != nil {
		t.Fatal(err)
	}
	card := cardJSON("1", true)
	byA, byB := a.sign(t, card, keys.url()), b.sign(t, card, keys.url())
	httpsJKU := b.sign(t, card, "https://127.0.0.1:1/jwks.json")

	for _, tc := range []struct {
		name   string
		opts   SignatureOptions
		raw    []byte
		source string
		reason string
	}{
		{name: "jku over http refused by default", opts: SignatureOptions{}, raw: byB, reason: "keys-unavailable"},
		{name: "jku over http allowed", opts: SignatureOptions{JKU: JKUAny}, raw: byB, source: "jku", reason: "verified"},
		{name: "jku off", opts: SignatureOptions{JKU: JKUOff}, raw: byB, reason: "no-key"},
		{name: "trusted file", opts: SignatureOptions{JKU: JKUOff, Trusted: fileSet}, raw: byA, source: "trusted", reason: "verified"},
		{name: "trusted URL", opts: SignatureOptions{JKU: JKUOff, TrustedURL: operator.url()}, raw: byA, source: "trusted", reason: "verified"},
		{name: "trusted file and URL", opts: SignatureOptions{JKU: JKUOff, Trusted: signature.NewKeySet(), TrustedURL: operator.url()},
			raw: byA, source: "trusted", reason: "verified"},
		{name: "the trusted set answers for its kids", opts: SignatureOptions{JKU: JKUAny, Trusted: fileSet}, raw: byA, source: "trusted", reason: "verified"},
		{name: "https jku, unreachable", opts: SignatureOptions{}, raw: httpsJKU, reason: "keys-unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(newClock())
			o.Signatures = tc.opts
			sigs := newFetcher(t, o).Verify(context.Background(), tc.raw)
			if len(sigs) != 1 || sigs[0].Reason != tc.reason || sigs[0].Source != tc.source || sigs[0].Verified != (tc.reason == "verified") {
				t.Errorf("Verify = %+v; want %s from %q", sigs, tc.reason, tc.source)
			}
		})
	}

	f := newFetcher(t, testOptions(newClock()))
	if sigs := f.Verify(context.Background(), card); sigs != nil {
		t.Errorf("Verify(unsigned) = %+v", sigs)
	}
	if sigs := f.Verify(context.Background(), []byte("not json")); sigs != nil {
		t.Errorf("Verify(not a card) = %+v", sigs)
	}
}

// An outcome without keys is kept briefly: once the key set is back, the
// card verifies without waiting for ResultTTL.
func TestVerifyKeysUnavailableIsShortLived(t *testing.T) {
	clk := newClock()
	a := newTestSigner(t, "a")
	operator := newJWKSServer(t, []byte(`{"not":"a key set"}`), "")
	signed := a.sign(t, cardJSON("1", true), "")
	o := testOptions(clk)
	o.Signatures = SignatureOptions{TrustedURL: operator.url(), JKU: JKUOff}
	f := newFetcher(t, o)
	ctx := context.Background()
	reason := func() string {
		sigs := f.Verify(ctx, signed)
		if len(sigs) != 1 {
			t.Fatalf("Verify = %+v", sigs)
		}
		return sigs[0].Reason
	}
	if r := reason(); r != "keys-unavailable" {
		t.Fatalf("key set not a key set: %s, want keys-unavailable", r)
	}
	operator.set(jwksJSON(t, a.jwk()), "max-age=600")
	if r := reason(); r != "keys-unavailable" {
		t.Errorf("within FailureTTL: %s, want the kept keys-unavailable", r)
	}
	clk.Advance(DefaultJWKSFailureTTL + time.Second)
	if r := reason(); r != "verified" {
		t.Errorf("after FailureTTL: %s, want verified", r)
	}
	n := f.verify.verified.Load()
	clk.Advance(DefaultJWKSMaxTTL - time.Minute)
	if r := reason(); r != "verified" || f.verify.verified.Load() != n {
		t.Errorf("a verified outcome within ResultTTL: %s after %d more verifications, want kept", r, f.verify.verified.Load()-n)
	}
	clk.Advance(2 * time.Minute)
	if reason(); f.verify.verified.Load() != n+1 {
		t.Error("a verified outcome older than ResultTTL was not verified again")
	}
}

func TestSignatureOptionsValidate(t *testing.T) {
	for _, o := range []SignatureOptions{
		{JKU: "sometimes"},
		{TrustedURL: "ftp://keys.example/jwks.json"},
		{ResultTTL: -1},
		{JWKS: JWKSOptions{MaxEntries: -1}},
	} {
		opts := testOptions(nil)
		opts.Signatures = o
		if f, err := New(opts); err == nil {
			f.Close()
			t.Errorf("New(Signatures %+v) = nil error", o)
		}
	}
	for in, want := range map[string]JKUPolicy{"": JKUHTTPS, "https": JKUHTTPS, "any": JKUAny, "off": JKUOff} {
		if got, err := ParseJKUPolicy(in); got != want || err != nil {
			t.Errorf("ParseJKUPolicy(%q) = %q, %v", in, got, err)
		}
	}
}

func TestSignaturesConversion(t *testing.T) {
	got := Signatures([]signature.Result{{Index: 0, KeyID: "k", Alg: "EdDSA", JKU: "https://x/j", Typ: "JOSE", Thumbprint: "tp",
		Source: signature.SourceJKU, Form: signature.FormSDK, Verified: true, Reason: signature.ReasonVerified, Detail: "d"}})
	want := []detector.Signature{{KeyID: "k", Alg: "EdDSA", JKU: "https://x/j", Thumbprint: "tp", Source: "jku", Verified: true, Reason: "verified"}}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("Signatures() = %+v, want %+v", got, want)
	}
	if Signatures(nil) != nil {
		t.Error("Signatures(nil) is not nil")
	}
}

// BenchmarkObserveAgentSigned is an observation of a signed card answered
// by a fresh lease: the verification outcome is kept per body, so it costs
// a SHA-256 of the body over BenchmarkObserveLeaseHit.
func BenchmarkObserveAgentSigned(b *testing.B) {
	s := newTestSigner(b, "bench")
	keys := newJWKSServer(b, s.jwks, "max-age=3600")
	a := newAgent(b, s.sign(b, cardJSON("1", true), keys.url()), `"v1"`, "max-age=300")
	f, err := New(Options{Allow: loopback, Signatures: SignatureOptions{JKU: JKUAny}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	if obs, err := f.ObserveAgent(ctx, "", a.url("/card"), false); err != nil || !obs.Signatures[0].Verified {
		b.Fatalf("ObserveAgent = %+v, %v", obs.Signatures, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ObserveAgent(ctx, "", a.url("/card"), false); err != nil {
			b.Fatal(err)
		}
	}
}
