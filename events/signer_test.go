package events_test

import (
	"reflect"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

var (
	signerA = detector.Signature{KeyID: "agent-2026-05", Alg: "ES256", Thumbprint: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
		Source: "trusted", Verified: true, Reason: "verified"}
	signerB = detector.Signature{KeyID: "other-1", Alg: "EdDSA", JKU: "https://cdn.example/jwks.json", Verified: false, Reason: "no-key"}
)

// signedSamples are a card.drift and a card.pinned of signed cards.
func signedSamples() (events.Drift, events.Pinned) {
	d := samples()[5].(events.Drift)
	a, b := signerA, signerB
	d.Pinned.Signer, d.Live.Signer = &a, &b
	d.Findings = append(d.Findings, detector.Finding{Rule: detector.RuleSignerChanged, Severity: detector.Warning,
		Path: "/signatures/0", Before: map[string]any{"kid": "agent-2026-05"}, After: map[string]any{"kid": "other-1"},
		Message: "signer changed", Touches: true})
	p := samples()[6].(events.Pinned)
	p.Signer = &a
	return d, p
}

// Signers survive Encode and Decode in both modes, and validate.
func TestSignerRoundTrip(t *testing.T) {
	d, p := signedSamples()
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		for _, data := range []events.Data{d, p} {
			msg, err := events.Encode(events.Event{ID: "x", Source: "urn:test", Time: t0, Data: data}, mode)
			if err != nil {
				t.Fatalf("Encode(%T, %v) = %v", data, mode, err)
			}
			ev, err := events.Decode(events.NATSMsg(msg))
			if err != nil {
				t.Fatalf("Decode(%T, %v) = %v", data, mode, err)
			}
			var got, want *detector.Signature
			switch g := ev.Data.(type) {
			case events.Drift:
				got, want = g.Live.Signer, d.Live.Signer
				if !reflect.DeepEqual(g.Pinned.Signer, d.Pinned.Signer) {
					t.Errorf("%v: pinned signer = %+v, want %+v", mode, g.Pinned.Signer, d.Pinned.Signer)
				}
			case events.Pinned:
				got, want = g.Signer, p.Signer
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v %T: signer = %+v, want %+v", mode, data, got, want)
			}
			if c := canonical(t, ev.Data); c != canonical(t, data) {
				t.Errorf("%v: decoded %s\nwant %s", mode, c, canonical(t, data))
			}
		}
	}
	// Unsigned cards carry no signer member at all.
	plain := samples()[5].(events.Drift)
	msg, err := events.Encode(events.Event{ID: "x", Source: "urn:test", Data: plain}, events.Structured)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.Decode(events.NATSMsg(msg))
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Data.(events.Drift); got.Pinned.Signer != nil || got.Live.Signer != nil {
		t.Errorf("unsigned cards decoded with signers %+v, %+v", got.Pinned.Signer, got.Live.Signer)
	}
}

// A card.drift of signed cards is identified by its live signer's key too
// (signatures never change a digest); one of unsigned cards keeps the id it
// had before signers were recorded.
func TestDriftIDSigner(t *testing.T) {
	d, _ := signedSamples()
	plain := d
	plain.Pinned.Signer, plain.Live.Signer = nil, nil
	const before = "drift-" // the id of plain is fixed by the fields it always had
	if id := events.MsgID(plain); id == events.MsgID(d) || id[:len(before)] != before {
		t.Errorf("MsgID with and without signers: %s, %s", id, events.MsgID(d))
	}
	other := d
	c := signerA
	other.Live.Signer = &c
	if events.MsgID(other) == events.MsgID(d) {
		t.Error("a drift re-signed by another key has the id of the first")
	}
	again := other
	reasonOnly := signerA
	reasonOnly.Verified, reasonOnly.Reason = false, "invalid-signature"
	again.Live.Signer = &reasonOnly
	if events.MsgID(again) != events.MsgID(other) {
		t.Error("the same signer's key with another outcome changed the id")
	}
	pinnedOnly := plain
	pinnedOnly.Pinned.Signer = &c
	if events.MsgID(pinnedOnly) != events.MsgID(plain) {
		t.Error("the pinned signer changed the id (it is fixed per pin)")
	}
}
