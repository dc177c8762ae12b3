package events_test

import (
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
)

// One split-brain episode is one card.inconsistent: the id depends on the
// card URL and the episode's start, not on the counts of a later snapshot
// nor on which worker publishes it.
func TestInconsistentMsgID(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	a, b := digestA, digestB
	ev := func(episode time.Time, countA int, cardURL string) events.Inconsistent {
		return events.Inconsistent{AgentURL: "https://agent.example", CardURL: cardURL, Episode: episode, Window: events.Duration(time.Minute),
			Digests: []events.DigestSeen{{Digest: a, Count: countA, FirstSeen: t0, LastSeen: t0}, {Digest: b, Count: 2, FirstSeen: t0, LastSeen: t0}}}
	}
	card := "https://agent.example/.well-known/agent-card.json"
	first := events.MsgID(ev(t0, 2, card))
	if first == "" || first[:len("inconsistent-")] != "inconsistent-" {
		t.Fatalf("MsgID = %q", first)
	}
	if got := events.MsgID(ev(t0, 9, card)); got != first {
		t.Errorf("a later snapshot of the same episode has id %s, want %s", got, first)
	}
	if got := events.MsgID(ev(t0.Add(time.Second), 2, card)); got == first {
		t.Errorf("another episode has the same id")
	}
	if got := events.MsgID(ev(t0, 2, "https://agent.example/.well-known/agent.json")); got == first {
		t.Errorf("another card URL has the same id")
	}
	if s, err := events.Subject(ev(t0, 2, card)); err != nil || s != "card.inconsistent.agent=2Eexample" {
		t.Errorf("Subject = %q, %v", s, err)
	}
}
