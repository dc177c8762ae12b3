package test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// The adversary suite, trust rows (issue 19, rows 4 and 5): each test runs
// the attack through a real `carddrift serve` against a real card endpoint,
// and fails on e91b0a3.

// adversaryCard is the card of the agent at AGENT (servicetest.Agent fills
// its URL in).
const adversaryCard = `{"name":"Ledger","description":"Reads invoices.","version":"1.0.0",` +
	`"supportedInterfaces":[{"url":"AGENT/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
	`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],` +
	`"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":["t"]}]}`

// jwksFile writes the public keys of keys as a JWKS file and returns its path.
func jwksFile(t *testing.T, keys ...servicetest.SigningKey) string {
	t.Helper()
	var set struct {
		Keys []jose.JSONWebKey `json:"keys"`
	}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.Pub.JWK)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "keys.json")
	must(t, os.WriteFile(p, b, 0o600))
	return p
}

// TestAdversaryAttackerSignature (row 4): the operator trusts its key
// (--jwks) and requires signed cards; the card endpoint is the attacker's.
// The attacker re-signs the agent's card with its own key and names, as
// jku, a key set on its own https host. carddrift fetches that key set (the
// default --jku https) and the signature verifies — with a key the
// signature brought along. That is the signer's claim, not trust: the
// verdict must be signature-required, abort. On e91b0a3 the jku key counted
// and the verdict was continue [signer-changed].
func TestAdversaryAttackerSignature(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	operator := servicetest.NewSigningKey(t, "operator-2026")
	attacker := servicetest.NewSigningKey(t, "attacker")

	// The attacker's key set, on its own https host; the child trusts its
	// certificate as it would a public CA's.
	var jwksFetches atomic.Int64
	evil := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jwksFetches.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		json.NewEncoder(w).Encode(map[string]any{"keys": []jose.JSONWebKey{attacker.Pub.JWK}})
	}))
	t.Cleanup(evil.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	must(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: evil.Certificate().Raw}), 0o600))
	t.Setenv("SSL_CERT_FILE", ca)

	agent := servicetest.NewAgent(t, "")
	card := strings.ReplaceAll(adversaryCard, "AGENT", agent.URL())
	agent.Set(operator.Sign(t, card))
	resigned, err := signature.Sign([]byte(card), attacker.Priv, signature.SignOptions{KeyID: attacker.KeyID, JKU: evil.URL + "/jwks.json"})
	must(t, err)

	keys := jwksFile(t, operator)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		flags  []string
		action detector.Action
		rules  []string
	}{
		// The posture for signed fleets: only a key trusted for the agent
		// vouches for its card.
		{name: "signed cards required", flags: []string{"--require-signed-cards"}, action: detector.Abort,
			rules: []string{detector.RuleSignatureRequired, detector.RuleSignerChanged}},
		// Without it, the move from the operator's key to the attacker's
		// stays a warning, as loud as before.
		{name: "signed cards not required", action: detector.Continue, rules: []string{detector.RuleSignerChanged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent.Set(operator.Sign(t, card))
			r := servicetest.Start(t, servicetest.Options{})
			out := r.Out()
			startServe(t, bin, r.URL(), "serve-attacker", append([]string{"--jwks", keys}, tc.flags...)...)
			task := "victim"
			must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize",
				Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
			out.WaitFor(t, "pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, task)) == 1 })
			if s := out.Events(events.TypePinned, task)[0].Data.(events.Pinned).Signer; s == nil || !s.Verified || s.Source != "trusted" || s.KeyID != operator.KeyID {
				t.Fatalf("card.pinned signer %+v, want the operator's key, trusted", s)
			}

			agent.Set(string(resigned))
			must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
			out.WaitFor(t, "card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(task)) == 1 })
			d := out.Drifts(task)[0]
			t.Logf("card.drift %s %v (%s); live signer %+v", d.Verdict.Action, ruleList(d), d.Verdict.Reason, d.Live.Signer)
			// The attack as intended: the attacker's key set was fetched and
			// its signature verifies, recorded as the jku's claim.
			if s := d.Live.Signer; s == nil || !s.Verified || s.Source != "jku" || s.KeyID != attacker.KeyID || s.Thumbprint != attacker.Pub.Thumbprint {
				t.Errorf("live signer %+v, want the attacker's key, verified from its jku", s)
			}
			if jwksFetches.Load() == 0 {
				t.Error("the attacker's key set was never fetched")
			}
			if got := ruleList(d); d.Verdict.Action != tc.action || !slices.Equal(got, tc.rules) {
				t.Errorf("card.drift %s %v, want %s %v:\n%s", d.Verdict.Action, got, tc.action, tc.rules, describeFindings(d.Findings))
			}
		})
	}
}

// TestAdversaryTamperedAfterSigning (row 5): an agent on @a2a-js/sdk 1.3.0
// signs its card with the SDK's generateAgentCardSignature; a client plans
// against the card as the SDK serves it to a client that sends no
// A2A-Version (its v0.3 form, signatures copied from the v1.0 card, so they
// do not verify over it) and submits it; then the agent changes its
// description after signing. carddrift pin says the live card's signature
// is invalid; through serve (same --jwks) the streaming transition must say
// so too — signature-invalid, abort — and under --require-signed-cards as
// well. On e91b0a3 the pin's signature, never verified, was not compared:
// the only card.drift was continue [descriptive-text-changed].
func TestAdversaryTamperedAfterSigning(t *testing.T) {
	node := signaturetest.SDKNode(t, interopDir)
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	a := startSDKAgent(t, node, 0)
	a.control(t, `{"sign":{"kid":"k1"}}`)
	keyset, _ := getCard(t, a.base+"/jwks.json", "")
	keys := filepath.Join(t.TempDir(), "keys.json")
	must(t, os.WriteFile(keys, keyset, 0o600))
	clientCard, _ := getCard(t, a.cardURL, "") // what a client without A2A-Version holds

	ctx := context.Background()
	type run struct {
		r   *servicetest.Rig
		out *servicetest.Collector
	}
	runs := map[string]run{}
	for _, name := range []string{"default", "strict"} {
		r := servicetest.Start(t, servicetest.Options{})
		flags := []string{"--jwks", keys}
		if name == "strict" {
			flags = append(flags, "--require-signed-cards")
		}
		startServe(t, bin, r.URL(), "serve-"+name, flags...)
		runs[name] = run{r: r, out: r.Out()}
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "client-" + name, AgentURL: a.base, SkillID: "summarize-invoice",
			Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed, Card: clientCard}))
		runs[name].out.WaitFor(t, name+": pinned", func(c *servicetest.Collector) bool {
			return len(c.Events(events.TypePinned, "client-"+name)) == 1
		})
		p := runs[name].out.Events(events.TypePinned, "client-"+name)[0].Data.(events.Pinned)
		t.Logf("%s: card.pinned %s signer %+v", name, p.Source, p.Signer)
	}

	a.control(t, `{"description":"Summarises invoices and pays them."}`)
	pinOut, err := exec.Command(bin, "pin", "--json", "--jwks", keys, "--fetch-allow", "127.0.0.0/8", a.base).Output()
	must(t, err)
	var pinned struct {
		Signatures []detector.Signature `json:"signatures"`
	}
	if err := json.Unmarshal(pinOut, &pinned); err != nil || len(pinned.Signatures) != 1 || pinned.Signatures[0].Reason != "invalid-signature" {
		t.Fatalf("carddrift pin --json of the tampered card: %+v, %v; want invalid-signature", pinned.Signatures, err)
	}

	for name, want := range map[string][]string{
		"default": {detector.RuleSignatureInvalid, detector.RuleDescriptiveTextChanged},
		"strict":  {detector.RuleSignatureInvalid, detector.RuleSignatureRequired, detector.RuleDescriptiveTextChanged},
	} {
		task, rn := "client-"+name, runs[name]
		must(t, rn.r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.base, Method: "message/stream", Attempt: 1}))
		rn.out.WaitFor(t, task+": card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts(task)) == 1 })
		d := rn.out.Drifts(task)[0]
		t.Logf("%s: card.drift %s %v (%s)", name, d.Verdict.Action, ruleList(d), d.Verdict.Reason)
		if got := ruleList(d); d.Verdict.Action != detector.Abort || !slices.Equal(got, want) {
			t.Errorf("%s: card.drift %s %v, want abort %v:\n%s", name, d.Verdict.Action, got, want, describeFindings(d.Findings))
		}
		if s := d.Live.Signer; s == nil || s.KeyID != "k1" || s.Verified || s.Reason != "invalid-signature" || s.Source != "trusted" {
			t.Errorf("%s: live signer %+v, want k1, invalid-signature against the trusted key", name, s)
		}
	}
}
