package test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// Signed cards end to end (issue 12): an agent on @a2a-js/sdk signs its card
// with the SDK's generateAgentCardSignature and publishes its keys at the
// jku its signatures name (test/interop/sdkagent.mjs). A real `carddrift
// serve` follows that jku (--jku any: the agent is on http loopback) and,
// for a task pinned just before each step, reports what the step changed:
//
//	the agent starts signing           signature-added     (info)     continue
//	the agent rotates to its next key  signer-changed      (warning)  continue
//	a field changed after signing      signature-invalid   (breaking) abort
//	the agent stops signing            signature-removed   (warning)  continue
//
// and `carddrift pin --json` shows the signer. Those keys come from the jku
// (source "jku"): the signer's claim. Under --require-signed-cards (a second
// serve on its own streams, trusting k1 and k2 for the agent with --trust)
// the unsigned card aborts a task, the verdict saying why, the card signed
// by k1 does not, and one signed by k3 — a key only its jku vouches for —
// aborts (signature-required).
func TestInteropSignedCards(t *testing.T) {
	node := signaturetest.SDKNode(t, interopDir)
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	a := startSDKAgent(t, node, 0) // no-cache: every transition revalidates
	// k2 is published from the start, as the next key of a rotation is.
	a.control(t, `{"addKey":{"kid":"k2"}}`)

	r := servicetest.Start(t, servicetest.Options{})
	out := r.Out()
	startServe(t, bin, r.URL(), "serve-signed", "--jku", "any")
	ctx := context.Background()

	submit := func(task string) events.Pinned {
		t.Helper()
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: a.base, SkillID: "summarize-invoice",
			Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
		out.WaitFor(t, task+" pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, task)) == 1 })
		return out.Events(events.TypePinned, task)[0].Data.(events.Pinned)
	}
	stream := func(task string) events.Drift {
		t.Helper()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.base, Method: "message/stream", Attempt: 1}))
		out.WaitFor(t, task+": card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(task)) == 1 })
		d := out.Drifts(task)[0]
		t.Logf("%s: card.drift %s %v (%s)", task, d.Verdict.Action, ruleList(d), d.Verdict.Reason)
		return d
	}
	check := func(d events.Drift, action detector.Action, rules ...string) {
		t.Helper()
		if got := ruleList(d); d.Verdict.Action != action || !slices.Equal(got, rules) {
			t.Errorf("%s: card.drift %s %v, want %s %v:\n%s", d.TaskID, d.Verdict.Action, got, action, rules, describeFindings(d.Findings))
		}
	}
	signer := func(what string, s *detector.Signature, kid string) {
		t.Helper()
		if s == nil || s.KeyID != kid || !s.Verified || s.Source != "jku" || s.Thumbprint == "" || s.JKU != a.base+"/jwks.json" {
			t.Errorf("%s: signer %+v, want %s verified by the key at %s/jwks.json", what, s, kid, a.base)
		}
	}

	// The agent starts signing.
	p := submit("unsigned-then-signed")
	if p.Signer != nil {
		t.Errorf("card.pinned of an unsigned card has signer %+v", p.Signer)
	}
	a.control(t, `{"sign":{"kid":"k1"}}`)
	d := stream("unsigned-then-signed")
	check(d, detector.Continue, detector.RuleSignatureAdded)
	signer("signature-added: live", d.Live.Signer, "k1")

	// pin --json shows the signer.
	pinOut, err := exec.Command(bin, "pin", "--json", "--jku", "any", a.base).Output()
	if err != nil {
		t.Fatalf("carddrift pin --json: %v", err)
	}
	var pinned struct {
		Signatures []detector.Signature `json:"signatures"`
	}
	if err := json.Unmarshal(pinOut, &pinned); err != nil || len(pinned.Signatures) != 1 {
		t.Fatalf("carddrift pin --json: signatures %+v, %v\n%s", pinned.Signatures, err, pinOut)
	}
	signer("carddrift pin --json", &pinned.Signatures[0], "k1")

	// The agent rotates to its next key: the content, and so the digest, is
	// the same.
	p = submit("rotated")
	signer("card.pinned", p.Signer, "k1")
	a.control(t, `{"sign":{"kid":"k2"}}`)
	d = stream("rotated")
	check(d, detector.Continue, detector.RuleSignerChanged)
	signer("signer-changed: pinned", d.Pinned.Signer, "k1")
	signer("signer-changed: live", d.Live.Signer, "k2")
	if d.Pinned.Digest != d.Live.Digest {
		t.Errorf("signer-changed: digests %s and %s, want one (signatures are not part of it)", d.Pinned.Digest, d.Live.Digest)
	}
	if d.Pinned.Signer != nil && d.Live.Signer != nil && d.Pinned.Signer.Thumbprint == d.Live.Signer.Thumbprint {
		t.Errorf("signer-changed with one thumbprint %s", d.Live.Signer.Thumbprint)
	}

	// A field changed after signing.
	signer("card.pinned", submit("tampered").Signer, "k2")
	a.control(t, `{"description":"Summarises invoices and pays them."}`)
	d = stream("tampered")
	check(d, detector.Abort, detector.RuleSignatureInvalid, detector.RuleDescriptiveTextChanged)
	if s := d.Live.Signer; s == nil || s.KeyID != "k2" || s.Verified || s.Reason != "invalid-signature" {
		t.Errorf("signature-invalid: live signer %+v, want k2, invalid-signature", s)
	}

	// The agent stops signing.
	a.control(t, `{"sign":{"kid":"k2"}}`) // the new description, signed
	signer("card.pinned", submit("stopped").Signer, "k2")
	a.control(t, `{"unsign":true}`)
	check(stream("stopped"), detector.Continue, detector.RuleSignatureRemoved)

	// Signed fleets: a deployment that requires signed cards, and trusts
	// the agent's keys k1 and k2 for it (--trust, keys inline). A key the
	// agent publishes later at its jku is its own claim until the operator
	// trusts it too.
	keyset, _ := getCard(t, a.base+"/jwks.json", "")
	trust, err := json.Marshal(map[string]json.RawMessage{a.base: keyset})
	if err != nil {
		t.Fatal(err)
	}
	trustFile := filepath.Join(t.TempDir(), "trust.json")
	must(t, os.WriteFile(trustFile, trust, 0o600))
	strict := servicetest.Start(t, servicetest.Options{})
	strictOut := strict.Out()
	startServe(t, bin, strict.URL(), "serve-strict", "--jku", "any", "--trust", trustFile, "--require-signed-cards")
	for _, step := range []struct {
		task, control, reason string
	}{
		{task: "strict-unsigned", reason: "signature-required (the live card is not signed, and signed cards are required)"},
		{task: "strict-signed", control: `{"sign":{"kid":"k1"}}`},
		{task: "strict-untrusted", control: `{"sign":{"kid":"k3"}}`,
			reason: `signature-required (no signature of the live card verifies with a key trusted for this agent (kid "k3"`},
	} {
		if step.control != "" {
			a.control(t, step.control)
		}
		must(t, strict.Emit.Submitted(ctx, events.Submitted{TaskID: step.task, AgentURL: a.base, SkillID: "summarize-invoice"}))
		strictOut.WaitFor(t, step.task+" pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, step.task)) == 1 })
		must(t, strict.Emit.Request(ctx, events.Request{TaskID: step.task, AgentURL: a.base, Method: "message/stream", Attempt: 1}))
		if step.reason == "" {
			strict.Drained(t, 20*time.Second)
			strictOut.CaughtUp(t)
			if ds := strictOut.Drifts(step.task); len(ds) > 0 {
				t.Errorf("%s: card.drift %s (%s) for a card signed by a verified key", step.task, ds[0].Verdict.Action, ds[0].Verdict.Reason)
			}
			continue
		}
		strictOut.WaitFor(t, step.task+": card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(step.task)) == 1 })
		d := strictOut.Drifts(step.task)[0]
		t.Logf("%s: card.drift %s %v (%s)", step.task, d.Verdict.Action, ruleList(d), d.Verdict.Reason)
		if d.Verdict.Action != detector.Abort || !strings.Contains(d.Verdict.Reason, step.reason) {
			t.Errorf("%s: card.drift %s %q, want abort saying %q", step.task, d.Verdict.Action, d.Verdict.Reason, step.reason)
		}
	}
}

// ruleList is the rule ids of a card.drift's findings, in order.
func ruleList(d events.Drift) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Rule)
	}
	return out
}
