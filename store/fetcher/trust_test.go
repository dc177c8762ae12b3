package fetcher

import (
	"context"
	"errors"
	"testing"

	"github.com/carddrift/carddrift/detector/signature"
)

func TestOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Agent.Example/.well-known/agent-card.json": "https://agent.example",
		"https://agent.example:443/a?b#c":                   "https://agent.example",
		"http://agent.example:80":                           "http://agent.example",
		"http://agent.example:8080/x":                       "http://agent.example:8080",
		"HTTP://[::1]:41241/":                               "http://[::1]:41241",
		"https://u:p@agent.example/":                        "https://agent.example",
	} {
		if got, err := Origin(in); got != want || err != nil {
			t.Errorf("Origin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "agent.example", "ftp://agent.example", "https://", "/relative"} {
		if got, err := Origin(in); !errors.Is(err, ReasonInvalidURL) {
			t.Errorf("Origin(%q) = %q, %v; want ReasonInvalidURL", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"https://Agent.Example":      "https://agent.example",
		"https://agent.example:443/": "https://agent.example",
		"http://127.0.0.1:41241":     "http://127.0.0.1:41241",
		"http://[::1]:80":            "http://[::1]",
	} {
		if got, err := ParseOrigin(in); got != want || err != nil {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "agent.example", "https://agent.example/agent", "https://agent.example?x", "https://agent.example/#f",
		"https://agent.example#", "https://u@agent.example", "https://agent.example:", "ws://agent.example", "https://agent.example/?"} {
		if got, err := ParseOrigin(in); !errors.Is(err, ErrNotOrigin) {
			t.Errorf("ParseOrigin(%q) = %q, %v; want ErrNotOrigin", in, got, err)
		}
	}
}

// TestVerifyScopedTrust: a key is trusted for the agents its operator says.
// A key scoped to an agent's origin verifies that agent's card as trusted
// and nobody else's; a key trusted for every agent verifies any; a key from
// the jku the signature names verifies but is recorded as the signer's
// claim; a kid a trusted set holds for the agent cannot be answered by a
// jku; and one body verified for two agents is two outcomes.
func TestVerifyScopedTrust(t *testing.T) {
	a, b, g := newTestSigner(t, "a"), newTestSigner(t, "b"), newTestSigner(t, "g")
	attacker := newTestSigner(t, "a") // claims kid "a" with its own key
	claims := newJWKSServer(t, jwksJSON(t, a.jwk(), b.jwk()), "max-age=600")
	forged := newJWKSServer(t, jwksJSON(t, attacker.jwk()), "max-age=600")
	bURL := newJWKSServer(t, jwksJSON(t, b.jwk()), "max-age=600")
	setOf := func(s testSigner) signature.Keys {
		set, err := signature.ParseJWKS(jwksJSON(t, s.jwk()))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	const agentA, agentB = "https://a.example", "http://127.0.0.1:8001"
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{
		JKU:     JKUAny,
		Trusted: setOf(g),
		Scoped: map[string]TrustedKeys{
			agentA: {Keys: setOf(a)},
			agentB: {URL: bURL.url()},
		},
	}
	f := newFetcher(t, o)
	card := cardJSON("1", true)
	byA, byB, byG := a.sign(t, card, claims.url()), b.sign(t, card, claims.url()), g.sign(t, card, "")
	byAttacker := attacker.sign(t, card, forged.url())
	for _, tc := range []struct {
		name, at       string
		raw            []byte
		source, reason string
		thumbprint     string
	}{
		{name: "a at its own origin", at: agentA + "/.well-known/agent-card.json", raw: byA, source: "trusted", reason: "verified", thumbprint: thumbprint(t, a)},
		{name: "a at another origin: its jku's claim", at: agentB + "/card.json", raw: byA, source: "jku", reason: "verified", thumbprint: thumbprint(t, a)},
		{name: "a read from a file: its jku's claim", at: "", raw: byA, source: "jku", reason: "verified", thumbprint: thumbprint(t, a)},
		{name: "b by URL at its origin", at: agentB + "/", raw: byB, source: "trusted", reason: "verified", thumbprint: thumbprint(t, b)},
		{name: "b at a's origin: a claim", at: agentA, raw: byB, source: "jku", reason: "verified", thumbprint: thumbprint(t, b)},
		{name: "g everywhere", at: agentA, raw: byG, source: "trusted", reason: "verified", thumbprint: thumbprint(t, g)},
		{name: "g from a file", at: "", raw: byG, source: "trusted", reason: "verified", thumbprint: thumbprint(t, g)},
		{name: "g at an origin without keys of its own", at: "https://c.example", raw: byG, source: "trusted", reason: "verified", thumbprint: thumbprint(t, g)},
		{name: "an attacker's key under a's kid at a's origin", at: agentA, raw: byAttacker, source: "trusted", reason: "invalid-signature", thumbprint: thumbprint(t, a)},
		{name: "an attacker's key under a's kid elsewhere: a claim", at: "https://c.example", raw: byAttacker, source: "jku", reason: "verified", thumbprint: thumbprint(t, attacker)},
		{name: "a at a's origin, spelt otherwise", at: "HTTPS://A.EXAMPLE:443/x", raw: byA, source: "trusted", reason: "verified", thumbprint: thumbprint(t, a)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := f.VerifyAt(context.Background(), tc.at, tc.raw)
			if len(sigs) != 1 {
				t.Fatalf("VerifyAt(%q) = %+v", tc.at, sigs)
			}
			if s := sigs[0]; s.Source != tc.source || s.Reason != tc.reason || s.Thumbprint != tc.thumbprint || s.Verified != (tc.reason == "verified") {
				t.Errorf("VerifyAt(%q) = %+v; want %s, source %q, key %s", tc.at, s, tc.reason, tc.source, tc.thumbprint)
			}
		})
	}
	if n := bURL.requests.Load(); n != 1 {
		t.Errorf("the scoped key set URL was fetched %d times, want once (max-age=600)", n)
	}
}

func TestSignatureOptionsScopedValidate(t *testing.T) {
	set := signature.NewKeySet()
	for _, scoped := range []map[string]TrustedKeys{
		{"https://Agent.example": {Keys: set}},        // not in normal form
		{"https://agent.example/path": {Keys: set}},   // not an origin
		{"https://agent.example": {}},                 // no keys
		{"https://agent.example": {URL: "ftp://x/j"}}, // not http
	} {
		opts := testOptions(nil)
		opts.Signatures = SignatureOptions{Scoped: scoped}
		if f, err := New(opts); err == nil {
			f.Close()
			t.Errorf("New(Scoped %v) = nil error", scoped)
		}
	}
	opts := testOptions(nil)
	opts.Signatures = SignatureOptions{Scoped: map[string]TrustedKeys{"https://agent.example": {Keys: set, URL: "https://agent.example/jwks.json"}}}
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New(a valid Scoped) = %v", err)
	}
	f.Close()
}
