package test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// sigOverLimit is the signer reason of a signature a verification limit
// stopped, as the event schemas spell it (spelt out here, not taken from
// package detector, so that the test also builds on e91b0a3).
const sigOverLimit = "over-limit"

// processCPU is the CPU time (user and system) this test process has used:
// the embedded NATS server, the worker and the test together.
func processCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hostileSite serves an agent card and a key set, each swappable.
type hostileSite struct {
	srv        *httptest.Server
	mu         sync.Mutex
	card, jwks []byte
}

func newHostileSite(t *testing.T) *hostileSite {
	s := &hostileSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body := map[string][]byte{fetcher.WellKnownPath: s.card, "/jwks.json": s.jwks}[r.URL.Path]
		s.mu.Unlock()
		if body == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *hostileSite) set(card, jwks []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if card != nil {
		s.card = card
	}
	if jwks != nil {
		s.jwks = jwks
	}
}

// TestAdversarySignatureCPU (issue 19, row 2): a publisher's card of 16
// ES512 signatures whose kid names 99 P-521 keys, over three distinct
// canonical forms — 4,800 verifications, 15–18 s of worker CPU on e91b0a3 —
// sent as the client card of an a2a.task.submitted, and served by an agent
// (its key set at the jku the signatures name, followed: --jku any). Each
// is pinned with its signatures over-limit, and a task pinned on a card the
// agent signed aborts with signature-invalid when the agent serves 16
// signatures under that key's kid instead. All of it within a CPU bound
// that one such card alone exceeded by far.
func TestAdversarySignatureCPU(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()
	r.startWorker("sigbounds", func(o *worker.Options) { o.Fetch.Signatures.JKU = fetcher.JKUAny })
	ctx := context.Background()

	keys := newHostileSite(t)  // the attacker's key set
	agent := newHostileSite(t) // an agent serving the hostile card
	victim := newHostileSite(t)
	jku := keys.srv.URL + "/jwks.json"
	// 99 keys under the hostile kid, and the vendor's: the 100 a set may list.
	clientCard, hostileJWKS, err := signaturetest.Hostile{JKU: jku, Keys: 99}.Build()
	must(t, err)
	servedCard, _, err := signaturetest.Hostile{JKU: jku}.Build() // another body: not the cached outcome
	must(t, err)
	// The vendor's own key, under its own kid in the same set, and the card
	// it signed; then 16 signatures under that kid that none of it made.
	vendor, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	must(t, err)
	signed, err := signature.Sign([]byte(signaturetest.HostileCard), vendor, signature.SignOptions{KeyID: "vendor", JKU: jku})
	must(t, err)
	forged, _, err := signaturetest.Hostile{KeyID: "vendor", JKU: jku}.Build()
	must(t, err)
	var set jose.JSONWebKeySet
	must(t, json.Unmarshal(hostileJWKS, &set))
	set.Keys = append([]jose.JSONWebKey{{Key: vendor.Public(), KeyID: "vendor", Algorithm: "ES512", Use: "sig"}}, set.Keys...)
	jwks, err := json.Marshal(set)
	must(t, err)
	keys.set(nil, jwks)
	agent.set(servedCard, nil)
	victim.set(signed, nil)

	// The victim's task, pinned on the vendor's signed card, before the
	// clock starts.
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "sig-victim", AgentURL: victim.srv.URL, SkillID: "s",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
	out.waitFor(t, "the victim's pin", func(o *outbound) bool { return len(o.Events(events.TypePinned, "sig-victim")) == 1 })
	if p := out.Events(events.TypePinned, "sig-victim")[0].Data.(events.Pinned); p.Signer == nil || !p.Signer.Verified || p.Signer.KeyID != "vendor" {
		t.Fatalf("the victim's pin: signer %+v, want the vendor's key, verified", p.Signer)
	}
	victim.set(forged, nil)

	// The attack: one client card, one served card, one revalidation.
	cpu0, start := processCPU(t), time.Now()
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "sig-client", AgentURL: agent.srv.URL, SkillID: "s",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed, Card: clientCard}))
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "sig-served", AgentURL: agent.srv.URL, SkillID: "s",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
	must(t, r.emit.Request(ctx, events.Request{TaskID: "sig-victim", AgentURL: victim.srv.URL, Method: "message/stream", Attempt: 1}))
	// Generous: on e91b0a3 each hostile card takes 15–18 s of CPU, and the
	// failure should say how much.
	eventually(t, 3*time.Minute, "both pins and the victim's drift", func() bool {
		return len(out.Events(events.TypePinned, "sig-client")) == 1 && len(out.Events(events.TypePinned, "sig-served")) == 1 &&
			len(out.drifts("sig-victim")) == 1
	})
	cpu := processCPU(t) - cpu0
	t.Logf("three hostile cards handled: %v of process CPU, %v wall", cpu.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	for _, task := range []string{"sig-client", "sig-served"} {
		p := out.Events(events.TypePinned, task)[0].Data.(events.Pinned)
		if p.Signer == nil || p.Signer.Reason != sigOverLimit || p.Signer.Verified {
			t.Errorf("%s: card.pinned signer %+v, want over-limit", task, p.Signer)
		}
		pin, _, err := r.stores.Pins.Get(ctx, task)
		must(t, err)
		if len(pin.Signatures) != 16 {
			t.Errorf("%s: the pin records %d signatures, want 16", task, len(pin.Signatures))
		}
		for i, s := range pin.Signatures {
			if s.Reason != sigOverLimit || s.Verified {
				t.Errorf("%s: pinned signature %d = %+v, want over-limit", task, i, s)
			}
		}
	}
	d := out.drifts("sig-victim")[0]
	if rules := ruleList(d); d.Verdict.Action != detector.Abort || !slices.Contains(rules, detector.RuleSignatureInvalid) {
		t.Errorf("sig-victim: card.drift %s %v, want abort with %s:\n%s", d.Verdict.Action, rules, detector.RuleSignatureInvalid, describeFindings(d.Findings))
	}

	// One such card took 15 s and more of CPU before the limits; the three
	// of them, with everything else the process did meanwhile, must not
	// take seconds (the race detector slows the arithmetic several times).
	bound := 2 * time.Second
	if raceEnabled {
		bound = 10 * time.Second
	}
	if cpu > bound {
		t.Errorf("the hostile cards cost %v of CPU, want under %v", cpu.Round(time.Millisecond), bound)
	}
}
