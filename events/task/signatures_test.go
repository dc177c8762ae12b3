package task

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// A signed form of cardStreaming (signatures never change the digest) and a
// tampered one (another description: another digest).
const (
	cardSigned   = `{"name":"A","version":"1","url":"https://a.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S"}],"signatures":[{"protected":"e30","signature":"c2ln"}]}`
	cardTampered = `{"name":"A","description":"changed after signing","version":"1","url":"https://a.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S"}],"signatures":[{"protected":"e30","signature":"c2ln"}]}`
)

var (
	sigA = detector.Signature{KeyID: "a", Alg: "ES256", Thumbprint: "tpA", Source: "trusted", Verified: true, Reason: "verified"}
	sigB = detector.Signature{KeyID: "b", Alg: "ES256", Thumbprint: "tpB", Source: "jku", Verified: true, Reason: "verified"}
	sigC = detector.Signature{KeyID: "c", Alg: "EdDSA", Thumbprint: "tpC", Source: "jku", Verified: true, Reason: "verified"}
)

func with(s detector.Signature, verified bool, reason string) detector.Signature {
	s.Verified, s.Reason = verified, reason
	if reason == "keys-unavailable" || reason == "no-key" {
		s.Thumbprint, s.Source = "", ""
	}
	return s
}

// signedObs is an observation of c whose signatures verified as sigs.
func signedObs(c card, sigs ...detector.Signature) Observation {
	o := c.obs(t0.Add(1))
	o.Signatures = sigs
	return o
}

// TestSignatureTransitions: who signed the pinned card and who signs the
// live one, judged at a streaming request.
func TestSignatureTransitions(t *testing.T) {
	plain, signed, tampered := mk(t, cardStreaming), mk(t, cardSigned), mk(t, cardTampered)
	if plain.digest != signed.digest {
		t.Fatalf("signatures changed the digest: %s, %s", plain.digest, signed.digest)
	}
	req := detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}
	pinSigned := func(sigs ...detector.Signature) Pin {
		p := pinOn(signed, req)
		p.signed(sigs)
		return p
	}
	pinPlain := pinOn(plain, req)
	pinPlain.signed(nil)
	legacy := pinOn(signed, req) // a pin written before signatures were recorded

	tests := []struct {
		name          string
		pin           Pin
		live          Observation
		requireSigned bool
		wantOutcome   string
		wantAction    detector.Action
		wantRules     []string
		wantReason    string
	}{
		{name: "re-signed by the same key", pin: pinSigned(sigA), live: signedObs(signed, sigA), wantOutcome: OutcomeUnchanged},
		{name: "key set down, same kid", pin: pinSigned(sigA), live: signedObs(signed, with(sigA, false, "keys-unavailable")), wantOutcome: OutcomeUnchanged},
		{
			name: "rotated to another key", pin: pinSigned(sigA), live: signedObs(signed, sigB),
			wantOutcome: OutcomeDrift, wantAction: detector.Continue, wantRules: []string{detector.RuleSignerChanged},
		},
		{
			name: "tampered: the pinned key no longer verifies", pin: pinSigned(sigA), live: signedObs(tampered, with(sigA, false, "invalid-signature")),
			wantOutcome: OutcomeDrift, wantAction: detector.Abort,
			wantRules: []string{detector.RuleSignatureInvalid, detector.RuleDescriptiveTextChanged},
		},
		{
			name: "no longer signed", pin: pinSigned(sigA), live: plain.obs(t0.Add(1)),
			wantOutcome: OutcomeDrift, wantAction: detector.Continue, wantRules: []string{detector.RuleSignatureRemoved},
		},
		{
			name: "no longer signed, signed cards required", pin: pinSigned(sigA), live: plain.obs(t0.Add(1)), requireSigned: true,
			wantOutcome: OutcomeDrift, wantAction: detector.Abort,
			wantRules:  []string{detector.RuleSignatureRequired, detector.RuleSignatureRemoved},
			wantReason: "the live card is not signed, and signed cards are required",
		},
		{
			name: "never signed, signed cards required", pin: pinPlain, live: plain.obs(t0.Add(1)), requireSigned: true,
			wantOutcome: OutcomeDrift, wantAction: detector.Abort, wantRules: []string{detector.RuleSignatureRequired},
			wantReason: "the live card is not signed",
		},
		{
			name: "unverifiable, signed cards required", pin: pinSigned(sigA), live: signedObs(signed, with(sigA, false, "keys-unavailable")),
			requireSigned: true, wantOutcome: OutcomeDrift, wantAction: detector.Abort, wantRules: []string{detector.RuleSignatureRequired},
			wantReason: "no signature of the live card could be verified",
		},
		{name: "verified, signed cards required", pin: pinSigned(sigA), live: signedObs(signed, sigA), requireSigned: true, wantOutcome: OutcomeUnchanged},
		{
			name: "signed now", pin: pinPlain, live: signedObs(signed, sigB),
			wantOutcome: OutcomeDrift, wantAction: detector.Continue, wantRules: []string{detector.RuleSignatureAdded},
		},
		{name: "never signed", pin: pinPlain, live: plain.obs(t0.Add(1)), wantOutcome: OutcomeUnchanged},
		{name: "pin from before signers were recorded", pin: legacy, live: signedObs(signed, sigB), wantOutcome: OutcomeUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Meta{Seq: 5, Time: t0.Add(2), Now: t0.Add(2), Policy: Policy{RequireSigned: tt.requireSigned}}
			tr := Begin(request("message/stream", 1), m, tt.pin, signed.c)
			r := tr.Judge(tt.live)
			if r.Outcome != tt.wantOutcome {
				t.Fatalf("Judge() outcome = %s, want %s (publish %+v)", r.Outcome, tt.wantOutcome, r.Publish)
			}
			ds := drifts(r)
			if tt.wantOutcome != OutcomeDrift {
				if len(ds) > 0 {
					t.Errorf("Judge() published %v, want nothing", rules(ds[0]))
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("Judge() published %d card.drift, want 1", len(ds))
			}
			d := ds[0]
			if got := rules(d); !slices.Equal(got, tt.wantRules) {
				t.Errorf("card.drift rules = %v, want %v", got, tt.wantRules)
			}
			if d.Verdict.Action != tt.wantAction || !strings.Contains(d.Verdict.Reason, tt.wantReason) {
				t.Errorf("verdict = %s %q, want %s containing %q", d.Verdict.Action, d.Verdict.Reason, tt.wantAction, tt.wantReason)
			}
			if !reflect.DeepEqual(d.Pinned.Signer, tt.pin.Signer()) || !reflect.DeepEqual(d.Live.Signer, signer(tt.live.Signatures)) {
				t.Errorf("card.drift signers = %+v, %+v; want the pin's %+v and the live %+v",
					d.Pinned.Signer, d.Live.Signer, tt.pin.Signer(), signer(tt.live.Signatures))
			}
		})
	}
}

// A card re-signed by yet another key is a new card.drift although the
// digests and rules are those already reported; the same signer again is
// not.
func TestSignerChangesReportedOnce(t *testing.T) {
	signed := mk(t, cardSigned)
	req := detector.Requirements{SkillID: "summarize", Streaming: true}
	pin := pinOn(signed, req)
	pin.signed([]detector.Signature{sigA})
	m := Meta{Seq: 5, Time: t0.Add(2), Now: t0.Add(2)}
	var published []string
	for _, live := range []detector.Signature{sigB, sigA, sigB, sigC, sigC} {
		r := Begin(request("message/stream", 1), m, pin, signed.c).Judge(signedObs(signed, live))
		for _, d := range drifts(r) {
			published = append(published, d.Live.Signer.KeyID)
		}
		if r.Pin != nil {
			pin = *r.Pin
		}
	}
	if want := []string{"b", "c"}; !slices.Equal(published, want) {
		t.Errorf("card.drift published for live signers %v, want %v", published, want)
	}
}

// The pin records who signed the card it was made against, whichever way
// it was made, and card.pinned says so.
func TestSignaturesPinned(t *testing.T) {
	signed := mk(t, cardSigned)
	sub := func(d events.Submitted) *Submission {
		d.TaskID, d.AgentURL, d.SkillID = "t1", "https://a.example.com", "summarize"
		s, err := Submit(ev(events.TypeSubmitted, d), d, Meta{Seq: 1, Time: t0, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pinnedSigner := func(r Result) *detector.Signature {
		for _, d := range r.Publish {
			if p, ok := d.(events.Pinned); ok {
				return p.Signer
			}
		}
		t.Fatal("no card.pinned")
		return nil
	}

	t.Run("client card", func(t *testing.T) {
		s := sub(events.Submitted{Card: []byte(cardSigned)})
		if string(s.ClientCard()) != cardSigned {
			t.Fatalf("ClientCard() = %s", s.ClientCard())
		}
		s.ClientSignatures([]detector.Signature{with(sigB, false, "no-key"), sigA})
		r := s.Pinned()
		if !r.Pin.SignaturesKnown || len(r.Pin.Signatures) != 2 || *pinnedSigner(r) != sigA {
			t.Errorf("pin signatures %+v (known %v), card.pinned signer %+v; want both, signer a", r.Pin.Signatures, r.Pin.SignaturesKnown, pinnedSigner(r))
		}
	})
	t.Run("client card not verified", func(t *testing.T) {
		r := sub(events.Submitted{Card: []byte(cardSigned)}).Pinned()
		if r.Pin.SignaturesKnown || pinnedSigner(r) != nil {
			t.Errorf("pin signatures known %v, signer %+v; want neither", r.Pin.SignaturesKnown, pinnedSigner(r))
		}
	})
	t.Run("first fetch", func(t *testing.T) {
		s := sub(events.Submitted{})
		if s.ClientCard() != nil {
			t.Errorf("ClientCard() = %s for a first fetch", s.ClientCard())
		}
		o := signedObs(signed, sigA)
		r := s.Observed(&o, nil, nil)
		if !r.Pin.SignaturesKnown || *pinnedSigner(r) != sigA {
			t.Errorf("pin signatures %+v, signer %+v; want a", r.Pin.Signatures, pinnedSigner(r))
		}
	})
	t.Run("first fetch of an unsigned card", func(t *testing.T) {
		o := mk(t, cardStreaming).obs(t0.Add(1))
		r := sub(events.Submitted{}).Observed(&o, nil, nil)
		if !r.Pin.SignaturesKnown || len(r.Pin.Signatures) != 0 || pinnedSigner(r) != nil {
			t.Errorf("pin signatures %+v (known %v): want known, none", r.Pin.Signatures, r.Pin.SignaturesKnown)
		}
	})
	t.Run("pending pin completed", func(t *testing.T) {
		pin := Pin{TaskID: "t1", AgentURL: "https://a.example.com", PinnedAt: t0, Source: events.PinFirstFetch}
		r := Begin(request("message/stream", 1), Meta{Seq: 3, Time: t0, Now: t0}, pin, nil).Judge(signedObs(signed, sigB))
		if !r.Pin.SignaturesKnown || *pinnedSigner(r) != sigB {
			t.Errorf("pin signatures %+v, signer %+v; want b", r.Pin.Signatures, pinnedSigner(r))
		}
	})
}
