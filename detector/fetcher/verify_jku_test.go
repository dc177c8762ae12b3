package fetcher

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/signature"
)

// TestVerifyJKUsPerCard: whoever writes a card (an agent, or any client in
// a2a.task.submitted) chooses its signatures' jku URLs, and each distinct
// one is a fetch of up to TotalTimeout: sixteen signatures naming sixteen
// URLs on a host that stalls hold the handler for sixteen timeouts — past
// the worker's handler deadline — however few public-key operations the
// card costs. A card's signatures send the Fetcher to at most
// maxJKUsPerCard distinct jku URLs; the others are keys-unavailable
// (unverified, never trusted), and the key sets the operator trusts still
// answer every signature.
func TestVerifyJKUsPerCard(t *testing.T) {
	x, a := newTestSigner(t, "x"), newTestSigner(t, "a")
	other := newTestSigner(t, "other")
	sets := newJWKSServer(t, jwksJSON(t, other.jwk()), "max-age=600") // lacks kid x: every set is fetched
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUAny, Trusted: keySetOf(t, a)}
	f := newFetcher(t, o)
	card := cardJSON("1", true)
	for i := range 15 {
		card = x.sign(t, card, fmt.Sprintf("%s?n=%d", sets.url(), i))
	}
	card = a.sign(t, card, fmt.Sprintf("%s?n=last", sets.url()))
	sigs := f.VerifyAt(context.Background(), "", card)
	if len(sigs) != 16 {
		t.Fatalf("VerifyAt = %d signatures, want 16", len(sigs))
	}
	if n := sets.requests.Load(); n > maxJKUsPerCard {
		t.Errorf("one card's signatures made %d key set fetches, want at most %d", n, maxJKUsPerCard)
	}
	for i, s := range sigs[:15] {
		want := "no-key"
		if i >= maxJKUsPerCard {
			want = "keys-unavailable"
		}
		if s.Reason != want {
			t.Errorf("signature %d: %s, want %s", i, s.Reason, want)
		}
	}
	if s := sigs[15]; !s.Trusted() {
		t.Errorf("the signature by the trusted key, after the limit: %+v, want verified by it", s)
	}
}

func keySetOf(t *testing.T, signers ...testSigner) signature.Keys {
	t.Helper()
	var jwks []jose.JSONWebKey
	for _, s := range signers {
		jwks = append(jwks, s.jwk())
	}
	set, err := signature.ParseJWKS(jwksJSON(t, jwks...))
	if err != nil {
		t.Fatal(err)
	}
	return set
}
