package signature_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/signature"
)

// A card signed with an Ed25519 key, verified against a JWKS holding its
// public key, then changed after signing.
func Example() {
	card := []byte(`{"name":"Ledger Clerk","description":"Reads invoices.","version":"1.4.0",
		"capabilities":{"streaming":true,"extensions":[]},"url":"https://legacy.example/a2a",
		"skills":[{"id":"summarize","name":"Summarise","description":"Summaries.","tags":["invoice"]}]}`)

	key := ed25519.NewKeyFromSeed([]byte("carddrift example seed, 32 bytes"))
	signed, err := signature.Sign(card, key, signature.SignOptions{KeyID: "ledger-2026", JKU: "https://agent.example/jwks.json"})
	if err != nil {
		panic(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []jose.JSONWebKey{{Key: key.Public(), KeyID: "ledger-2026", Use: "sig"}}})
	trusted, err := signature.ParseJWKS(jwks)
	if err != nil {
		panic(err)
	}
	keys := signature.Sources{Trusted: trusted} // jku not followed

	show := func(raw []byte) {
		res, err := signature.Verify(context.Background(), raw, keys)
		if err != nil {
			panic(err)
		}
		for _, r := range res {
			fmt.Printf("%s %s %s: %s (form %q, source %q)\n", r.KeyID, r.Alg, r.Thumbprint, r.Reason, r.Form, r.Source)
		}
	}
	show(signed)
	// The SDK form signed here covers only the v1.0 schema: the v0.3 "url"
	// may change, the version may not.
	show([]byte(strings.Replace(string(signed), "legacy.example", "elsewhere.example", 1)))
	show([]byte(strings.Replace(string(signed), `"1.4.0"`, `"1.4.1"`, 1)))

	payload, _ := signature.Canonical(card, signature.FormSDK)
	fmt.Println(string(payload))
	// Output:
	// ledger-2026 EdDSA 2D68-AFR4mQ2faopnJdc1IITlpq-lhozQF_3i_ft4cc: verified (form "sdk", source "trusted")
	// ledger-2026 EdDSA 2D68-AFR4mQ2faopnJdc1IITlpq-lhozQF_3i_ft4cc: verified (form "sdk", source "trusted")
	// ledger-2026 EdDSA 2D68-AFR4mQ2faopnJdc1IITlpq-lhozQF_3i_ft4cc: invalid-signature (form "", source "trusted")
	// {"capabilities":{"streaming":true},"description":"Reads invoices.","name":"Ledger Clerk","skills":[{"description":"Summaries.","id":"summarize","name":"Summarise","tags":["invoice"]}],"version":"1.4.0"}
}
