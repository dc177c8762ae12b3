package fetcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// recordKeys answers every kid with no key, recording the jku URLs asked.
type recordKeys struct{ asked []string }

func (r *recordKeys) Lookup(_ context.Context, _, jku string) ([]signature.Key, error) {
	r.asked = append(r.asked, jku)
	return nil, nil
}

// FuzzJKUBudget: whatever jku URLs a card's signatures name, in whatever
// order, the keys behind one VerifyAt are asked about at most
// maxJKUsPerCard distinct ones, the first ones named, each as often as
// named; a refused one is still asked about without its jku (the trusted
// keys answer every kid) and fails with signature.ErrJKURefused.
func FuzzJKUBudget(f *testing.F) {
	f.Add("a\nb\nc")
	f.Add("a\na\na\nb\nb\nc\na")
	f.Add("\n\nx\n\ny\nz\nx")
	f.Fuzz(func(t *testing.T, list string) {
		inner := &recordKeys{}
		b := &jkuBudget{keys: inner}
		allowed := map[string]bool{}
		for _, jku := range strings.Split(list, "\n") {
			n := len(inner.asked)
			_, err := b.Lookup(context.Background(), "k", jku)
			if len(inner.asked) != n+1 {
				t.Fatalf("jku %q: the keys were asked %d times, want once", jku, len(inner.asked)-n)
			}
			got := inner.asked[n]
			switch {
			case jku == "" || allowed[jku] || len(allowed) < maxJKUsPerCard:
				if jku != "" {
					allowed[jku] = true
				}
				if got != jku || err != nil {
					t.Fatalf("jku %q within the budget: asked %q, err %v", jku, got, err)
				}
			default:
				if got != "" || !errors.Is(err, signature.ErrJKURefused) {
					t.Fatalf("jku %q past the budget: asked %q, err %v", jku, got, err)
				}
			}
		}
	})
}
