package fetcher

import (
	"context"
	"testing"
	"time"
)

// TestVerifyCallerDeadlineNotRemembered: a caller whose own deadline ends
// while a key set is being fetched learns nothing about that key set, so
// the failure is not remembered for anyone. Otherwise whoever writes a card
// (an agent, or any client in a2a.task.submitted) can time its signatures'
// lookups — slow jku hosts of its own first, then a jku naming the key set
// the operator trusts for another agent — so that the handler's deadline
// falls during that fetch, and every card of that agent is then
// keys-unavailable (under --require-signed-cards: signature-required,
// abort) for FailureTTL.
func TestVerifyCallerDeadlineNotRemembered(t *testing.T) {
	a, attacker := newTestSigner(t, "a"), newTestSigner(t, "x")
	trusted := newJWKSServer(t, jwksJSON(t, a.jwk()), "max-age=600")
	const agentA = "https://a.example"
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUAny, Scoped: map[string]TrustedKeys{agentA: {URL: trusted.url()}}}
	f := newFetcher(t, o)
	card := cardJSON("1", true)

	release := trusted.hold()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	hostile := f.VerifyAt(ctx, "https://b.example/.well-known/agent-card.json", attacker.sign(t, card, trusted.url()))
	if len(hostile) != 1 || hostile[0].Reason != "keys-unavailable" {
		t.Fatalf("the hostile card: %+v, want keys-unavailable (its caller's deadline)", hostile)
	}
	release()

	sigs := f.VerifyAt(context.Background(), agentA+"/.well-known/agent-card.json", a.sign(t, card, ""))
	if len(sigs) != 1 || sigs[0].Reason != "verified" || sigs[0].Source != "trusted" {
		t.Errorf("a's own card after another caller's deadline: %+v, want verified by the key trusted for a", sigs)
	}
}
