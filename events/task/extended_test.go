package task

import (
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// TestJudgeExtendedUnavailable: a pin of the extended card observed through
// the public card (the extended card can no longer be asked for) is pinned
// again on the public card, extended "unavailable", with a card.pinned and
// no card.drift; observed through the extended card (UseExtended pinned),
// or for a task pinned unavailable from the start, Judge judges as always.
func TestJudgeExtendedUnavailable(t *testing.T) {
	extRaw := []byte(`{"name":"A","version":"2","url":"https://a.example.com/a2a","capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S"},{"id":"audit","name":"A"}]}`)
	pubRaw := []byte(`{"name":"A","version":"1","url":"https://a.example.com/a2a","capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S"}]}`)
	at := time.Unix(100, 0)
	observe := func(raw []byte) Observation {
		c, err := detector.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := detector.Digest(raw)
		return Observation{CardURL: "https://a.example.com/.well-known/agent-card.json", Digest: d, Card: c, FetchedAt: at, VerifiedAt: at}
	}
	ext, pub := observe(extRaw), observe(pubRaw)
	submitted := func(state string, raw []byte) Pin {
		s, err := Submit(events.Event{ID: "s", Type: events.TypeSubmitted, Time: at},
			events.Submitted{TaskID: "t", AgentURL: "https://a.example.com", SkillID: "audit", Card: raw,
				Requires: events.Requires{ExtendedCard: true}}, Meta{Time: at})
		if err != nil {
			t.Fatal(err)
		}
		s.UseExtended(state)
		return *s.Pinned().Pin
	}
	req := events.Event{ID: "r", Type: events.TypeRequest, Time: at.Add(time.Second),
		Data: events.Request{TaskID: "t", Method: "message/stream", Attempt: 1}}
	for _, tc := range []struct {
		name       string
		pin        Pin
		pinnedCard *detector.Card
		state      string
		obs        Observation
		outcome    string
		digest     string // of the pin written
		extended   string
	}{
		{"extended pin, public card observed", submitted(events.ExtendedPinned, extRaw), ext.Card, events.ExtendedUnavailable, pub,
			OutcomePinned, pub.Digest, events.ExtendedUnavailable},
		{"extended pin, extended card withdrew a skill", submitted(events.ExtendedPinned, extRaw), ext.Card, events.ExtendedPinned, pub,
			OutcomeDrift, ext.Digest, events.ExtendedPinned},
		{"unavailable pin, public card unchanged", submitted(events.ExtendedUnavailable, pubRaw), pub.Card, events.ExtendedUnavailable, pub,
			OutcomeUnchanged, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Begin(req, Meta{Time: req.Time, Now: req.Time}, tc.pin, tc.pinnedCard)
			tr.UseExtended(tc.state)
			r := tr.Judge(tc.obs)
			if r.Outcome != tc.outcome {
				t.Fatalf("Judge outcome = %s, want %s (publish %+v)", r.Outcome, tc.outcome, r.Publish)
			}
			for _, d := range r.Publish {
				if _, drift := d.(events.Drift); drift && tc.outcome != OutcomeDrift {
					t.Errorf("card.drift published: %+v", d)
				}
			}
			if tc.digest == "" {
				return
			}
			if r.Pin == nil || r.Pin.Digest != tc.digest || r.Pin.Extended != tc.extended {
				t.Fatalf("pin written %+v, want digest %s extended %q", r.Pin, tc.digest, tc.extended)
			}
			if tc.outcome == OutcomePinned {
				p, ok := r.Publish[0].(events.Pinned)
				if !ok || p.Digest != pub.Digest || p.Extended != events.ExtendedUnavailable || r.PinFirst {
					t.Errorf("publish %+v (pin first %v), want one card.pinned of the public card, unavailable, written after", r.Publish, r.PinFirst)
				}
			}
		})
	}
}
