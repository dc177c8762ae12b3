package events_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

// encodeData encodes d in both modes and returns the data of the binary
// message, failing the test if either mode fails or the data does not
// validate.
func encodeData(t *testing.T, d events.Data) map[string]any {
	t.Helper()
	var data []byte
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		m, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Data: d}, mode)
		if err != nil {
			t.Fatalf("Encode(%T, %s) = %v", d, mode, err)
		}
		if mode == events.Binary {
			data = m.Data
		}
		if _, err := events.Decode(events.NATSMsg(m)); err != nil {
			t.Fatalf("Decode(Encode(%T, %s)) = %v", d, mode, err)
		}
	}
	if err := schemas.Validate(d.EventType(), data); err != nil {
		t.Fatalf("encoded %s does not validate: %v", d.EventType(), err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEncodeUnknownPinnedBody: a client-digest pin whose card body carddrift
// never saw has no fingerprint. Its card.pinned and card.drift encode (the
// first write-up's case used to be refused by the schemas), with the
// fingerprint absent rather than "".
func TestEncodeUnknownPinnedBody(t *testing.T) {
	pinned := encodeData(t, events.Pinned{TaskID: "t1", AgentURL: "https://a.example", Digest: digestA, Source: events.PinClientDigest,
		Trigger: events.Trigger{EventID: "e0", Type: events.TypeSubmitted, Source: "urn:client"}})
	if _, ok := pinned["fingerprint"]; ok {
		t.Errorf("card.pinned data = %v, want no fingerprint", pinned)
	}

	drift := encodeData(t, events.Drift{
		TaskID: "t1", AgentURL: "https://a.example", CardURL: "https://a.example/.well-known/agent-card.json",
		Pinned: events.CardRef{Digest: digestA},
		Live:   events.CardRef{Digest: digestB, Fingerprint: fpB, FetchedAt: t0},
		Findings: []detector.Finding{{Rule: detector.RulePinnedCardUnknown, Severity: detector.Breaking, Before: digestA, After: digestB,
			Message: "unknown", Touches: true}},
		Verdict: detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "fail-closed"},
		Trigger: events.Trigger{EventID: "e1", Type: events.TypeRequest},
	})
	if p := drift["pinned"].(map[string]any); len(p) != 1 || p["digest"] != digestA {
		t.Errorf("card.drift pinned = %v, want only the digest", p)
	}
	if l := drift["live"].(map[string]any); l["fingerprint"] != fpB {
		t.Errorf("card.drift live = %v, want its fingerprint", l)
	}

	// Only a client-digest pin may lack the fingerprint.
	for _, src := range []string{events.PinClientCard, events.PinFirstFetch} {
		_, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Data: events.Pinned{TaskID: "t1", AgentURL: "https://a.example", Digest: digestA, Source: src}}, events.Binary)
		var verr *schemas.ValidationError
		if !errors.Is(err, events.ErrSchemaViolation) || !errors.As(err, &verr) || verr.Field != "/fingerprint" {
			t.Errorf("Encode(card.pinned %s without fingerprint) = %v, want a schema violation at /fingerprint", src, err)
		}
	}
}

// TestEncodeTouchesAlways: every finding of an encoded card.drift carries
// touches, false included.
func TestEncodeTouchesAlways(t *testing.T) {
	d := samples()[5].(events.Drift)
	data := encodeData(t, d)
	fs := data["findings"].([]any)
	if len(fs) != len(d.Findings) {
		t.Fatalf("encoded %d findings, want %d", len(fs), len(d.Findings))
	}
	for i, f := range fs {
		touches, ok := f.(map[string]any)["touches"].(bool)
		if !ok || touches != d.Findings[i].Touches {
			t.Errorf("finding %d: touches = %v (present %v), want %v", i, f.(map[string]any)["touches"], ok, d.Findings[i].Touches)
		}
	}
}

// TestDecodeTouchesKnown: Decode reports whether the findings carried
// touches. card.drift events written before contract v1.1 lack it; they
// still decode (the schema keeps touches optional within v1).
func TestDecodeTouchesKnown(t *testing.T) {
	for _, tc := range []struct {
		file string
		want bool
		// touching lists the rules whose findings touch the task.
		touching []string
	}{
		{"abort.json", false, nil}, // written before contract v1.1
		{"continue-no-findings.json", true, nil},
		{"pinned-card-unknown.json", true, []string{detector.RulePinnedCardUnknown}},
		{"touches-scope-extension.json", true, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", events.TypeDrift, "valid", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			h := binHeaders("ce-type", events.TypeDrift, "ce-subject", "<delete>")
			ev, err := events.Decode(msg(h, string(data)))
			if err != nil {
				t.Fatalf("Decode = %v", err)
			}
			d := ev.Data.(events.Drift)
			if d.TouchesKnown != tc.want {
				t.Errorf("TouchesKnown = %v, want %v", d.TouchesKnown, tc.want)
			}
			var touching []string
			for _, f := range d.Findings {
				if f.Touches {
					touching = append(touching, f.Rule)
				}
			}
			if len(touching) != len(tc.touching) || (len(touching) > 0 && touching[0] != tc.touching[0]) {
				t.Errorf("touching rules = %v, want %v", touching, tc.touching)
			}
		})
	}
	// Scope and extension come back as sent.
	ev := events.Event{ID: "e1", Source: "urn:test", Time: time.Unix(0, 0), Data: samples()[5]}
	m, err := events.Encode(ev, events.Structured)
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.Decode(events.NATSMsg(m))
	if err != nil {
		t.Fatal(err)
	}
	d := got.Data.(events.Drift)
	if !d.TouchesKnown || d.Findings[2].Scope != "seats:admin" || d.Findings[3].Extension != "urn:ext:x" || !d.Findings[0].Touches {
		t.Errorf("decoded findings = %+v, want touches, scope and extension as sent", d.Findings)
	}
}

// TestReplanSkillRoundTrip: a card.drift whose verdict re-plans a degrade
// task onto a renamed skill (verdict.replanSkill, since contract v1.2) keeps
// it through Encode and Decode in both modes, and its data validates; a
// verdict without one has no replanSkill member.
func TestReplanSkillRoundTrip(t *testing.T) {
	d := samples()[5].(events.Drift)
	d.Findings = []detector.Finding{{
		Rule: detector.RuleSkillRenamed, Severity: detector.Breaking, Path: "/skills/0/id",
		Before: "summarize", After: "summarize-v2", Message: "renamed", Skill: "summarize", Touches: true,
	}}
	d.Verdict = detector.Verdict{Action: detector.Replan, Posture: detector.Degrade, Reason: "renamed", ReplanSkill: "summarize-v2"}
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		m, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Time: time.Unix(0, 0), Data: d}, mode)
		if err != nil {
			t.Fatalf("%s: Encode: %v", mode, err)
		}
		got, err := events.Decode(events.NATSMsg(m))
		if err != nil {
			t.Fatalf("%s: Decode: %v", mode, err)
		}
		gd := got.Data.(events.Drift)
		if gd.Verdict.ReplanSkill != d.Verdict.ReplanSkill || gd.Verdict.Action != d.Verdict.Action {
			t.Errorf("%s: decoded verdict %+v, want %+v", mode, gd.Verdict, d.Verdict)
		}
		if err := schemas.Validate(events.TypeDrift, []byte(canonical(t, gd))); err != nil {
			t.Errorf("%s: decoded data does not validate: %v", mode, err)
		}
	}
	plain := samples()[5].(events.Drift)
	if s := canonical(t, plain); strings.Contains(s, "replanSkill") {
		t.Errorf("a verdict without a replan skill encodes one: %s", s)
	}
}

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

// TestDecodeWindowBeyondDuration: a card.inconsistent window the schema's
// pattern accepts and time.Duration cannot hold is a violation of the
// window, as a value the Go type cannot hold.
func TestDecodeWindowBeyondDuration(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", events.TypeInconsistent, "valid", "two-replicas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	d["window"] = "9999999999999h"
	data, _ = json.Marshal(d)
	_, err = events.Decode(msg(binHeaders("ce-type", events.TypeInconsistent, "ce-subject", "<delete>"), string(data)))
	var de *events.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, events.ErrSchemaViolation) || de.Field != "/window" || de.Reason != "not a duration: 9999999999999h" {
		t.Errorf("Decode = %v, want a schema violation of /window: not a duration", err)
	}
}
