package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// TestReevaluateUnknownPinnedBody re-evaluates verdicts on tasks pinned by a
// client digest of a card carddrift never saw (card v1; the agent serves
// v2): the worker's decision (detector.EvaluateUnknown) is reproduced,
// another posture or rule set changes it, and the recorded
// pinned-card-unknown finding is not counted twice.
func TestReevaluateUnknownPinnedBody(t *testing.T) {
	r := newRig(t, cardV2)
	ctx := context.Background()
	url := r.agent.URL()
	unseen := digest(t, cardV1)
	type tk struct {
		id         string
		posture    detector.Posture
		idempotent bool
		want       detector.Action
	}
	tks := []tk{
		{"u-fc", detector.FailClosed, true, detector.Abort},
		{"u-deg", detector.Degrade, true, detector.Replan},
		{"u-deg-once", detector.Degrade, false, detector.Abort},
	}
	for _, k := range tks {
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: k.id, AgentURL: url, SkillID: "summarize",
			Posture: k.posture, Idempotent: k.idempotent, CardDigest: unseen}); err != nil {
			t.Fatal(err)
		}
		if err := r.Emit.Request(ctx, events.Request{TaskID: k.id, AgentURL: url, Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypeDrift, len(tks))
	rd := r.reader()

	reevaluate := func(t *testing.T, re replay.Reevaluation) []change {
		t.Helper()
		rep, out := reevaluate(t, rd, re, len(tks))
		for _, d := range rep.Differences {
			var rules []string
			for _, f := range d.Findings {
				rules = append(rules, f.Rule)
			}
			if re.Rules == nil && !slices.Equal(rules, []string{detector.RulePinnedCardUnknown}) {
				t.Errorf("%s: re-evaluated findings %v, want one pinned-card-unknown", d.TaskID, rules)
			}
		}
		return out
	}

	// What the worker published.
	tl, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]detector.Action{}
	for _, e := range tl.Entries {
		if d, ok := e.Data.(events.Drift); ok {
			got[d.TaskID] = d.Verdict.Action
		}
	}
	for _, k := range tks {
		if got[k.id] != k.want {
			t.Errorf("%s: published %q, want %s", k.id, got[k.id], k.want)
		}
	}

	disable, err := detector.ParseRuleSet(strings.NewReader(`{"disable":["pinned-card-unknown"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		re   replay.Reevaluation
		want []change
	}{
		{"as recorded", replay.Reevaluation{}, nil},
		{"fail-closed", replay.Reevaluation{Posture: detector.FailClosed}, []change{{"u-deg", detector.Replan, detector.Abort}}},
		{"degrade", replay.Reevaluation{Posture: detector.Degrade}, []change{{"u-fc", detector.Abort, detector.Replan}}},
		{"pinned-card-unknown disabled", replay.Reevaluation{Rules: disable}, []change{
			{"u-deg", detector.Replan, detector.Continue}, {"u-deg-once", detector.Abort, detector.Continue}, {"u-fc", detector.Abort, detector.Continue}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reevaluate(t, tc.re); !slices.Equal(got, tc.want) {
				t.Errorf("Reevaluate = %v, want %v", got, tc.want)
			}
		})
	}
}

// A pin's body that carddrift learns only after the verdict (the agent
// served it later, and its body was stored) does not change what
// re-evaluation reproduces: the worker judged without it (its card.drift's
// pinned has no fingerprint), and so does re-evaluation. Under load, the
// demo's re-evaluation check failed this way: a client-digest pin judged
// pinned-card-unknown, re-judged later with the body by then stored.
func TestReevaluateBodyLearnedLater(t *testing.T) {
	r := newRig(t, cardV2)
	ctx := context.Background()
	url := r.agent.URL()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "later", AgentURL: url, SkillID: "summarize",
		Posture: detector.Degrade, Idempotent: true, CardDigest: digest(t, cardV1)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit.Request(ctx, events.Request{TaskID: "later", AgentURL: url, Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypeDrift, 1)
	// The drift is the submission's (a client digest that is not the live
	// card): the request may still be handled, its fetch of v2 in flight,
	// and a pin on first fetch made now would share that fetch (v2).
	r.Drained(t, servicetest.WaitTimeout)

	// The agent serves v1 now; a task pinned on first fetch stores its body.
	r.agent.Set(cardV1)
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "stores-v1", AgentURL: url, SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 2)
	if d := r.Out().Events(events.TypePinned, "stores-v1")[0].Data.(events.Pinned).Digest; d != digest(t, cardV1) {
		t.Fatalf("stores-v1 pinned %s, want v1 (%s): the test's premise", d, digest(t, cardV1))
	}

	// Back on v2, a later transition of the first task is judged with the
	// body the worker now has: a second card.drift, with v1's findings
	// (its pinned still has no fingerprint: the pin was made without it).
	r.agent.Set(cardV2)
	if err := r.Emit.Status(ctx, events.Status{TaskID: "later", AgentURL: url, State: "input-required"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypeDrift, 2)

	rep, changes := reevaluate(t, r.reader(), replay.Reevaluation{}, 2)
	if len(changes) != 0 {
		t.Fatalf("re-evaluation as recorded changed %v (differences %+v), want none: each verdict re-judged on what the worker had", changes, rep.Differences)
	}
}

// Re-evaluating verdicts about signed cards judges the cards as the worker
// did — with the signers the card.drift recorded, not the signatures of the
// body stored under a digest (signatures never change one) — so it finds
// nothing to change: a tampered card still aborts, a rotation still only
// warns.
func TestReevaluateSignedCards(t *testing.T) {
	keyA, keyB := servicetest.NewSigningKey(t, "a"), servicetest.NewSigningKey(t, "b")
	r := &rig{Rig: servicetest.Start(t, servicetest.Options{Workers: []string{"w"}, Worker: func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(keyA.Pub, keyB.Pub), JKU: fetcher.JKUOff}
	}})}
	tampered, rotated := servicetest.NewAgent(t, keyA.Sign(t, cardV1)), servicetest.NewAgent(t, keyA.Sign(t, cardV1))
	ctx := context.Background()
	for task, a := range map[string]*servicetest.Agent{"tampered": tampered, "rotated": rotated} {
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: a.URL(), SkillID: "summarize"}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypePinned, 2)
	tampered.Set(strings.Replace(keyA.Sign(t, cardV1), `"name":"B"`, `"name":"B2"`, 1))
	rotated.Set(keyB.Sign(t, cardV1))
	for task, a := range map[string]*servicetest.Agent{"tampered": tampered, "rotated": rotated} {
		if err := r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.URL(), Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypeDrift, 2)
	want := map[string]detector.Action{"tampered": detector.Abort, "rotated": detector.Continue}
	for task, action := range want {
		if d := r.Out().Drifts(task)[0]; d.Verdict.Action != action {
			t.Fatalf("%s: published %s (%s), want %s", task, d.Verdict.Action, d.Verdict.Reason, action)
		}
	}
	rep, changes := reevaluate(t, r.reader(), replay.Reevaluation{}, 2)
	if len(changes) != 0 {
		for _, d := range rep.Differences {
			t.Errorf("%s: re-evaluated %s (%s), published %s", d.TaskID, d.New.Action, d.New.Reason, d.Old.Action)
		}
	}
}

// TestTimelineExtendedPin: a task's timeline says which card its pin is
// (card.pinned extended: the extended card, or unavailable: the public card).
func TestTimelineExtendedPin(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	pin := func(task, extended string) replay.Entry {
		return replay.Entry{Time: t0, Kind: replay.KindPin, Type: events.TypePinned, TaskID: task, AgentURL: "https://ledger.example",
			Data: events.Pinned{TaskID: task, AgentURL: "https://ledger.example", Source: events.PinFirstFetch, Extended: extended}}
	}
	tl := &replay.Timeline{Entries: []replay.Entry{pin("ext", events.ExtendedPinned), pin("pub", events.ExtendedUnavailable), pin("plain", "")}}
	var b bytes.Buffer
	if err := streamTimeline(tl, false)(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pinned (first-fetch, the extended card)", "pinned (first-fetch, extended card unavailable: the public card)", "pinned (first-fetch)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}

// extSecret is the credential every replay rendering is searched for.
const extSecret = "tok-0e51f2c9-replay-extended-secret"

// ledgerAgent is a v1.0 JSON-RPC agent whose public card (1.0.0) offers an
// extended card (2.0.0, with audit-ledger) to "Bearer extSecret" only.
func ledgerAgent(t *testing.T) (url string, public, extended func() []byte) {
	var srv *httptest.Server
	card := func(version string, skills ...string) []byte {
		var s []string
		for _, id := range skills {
			s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
		}
		return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":%q,`+
			`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
			`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
			version, srv.URL, strings.Join(s, ","))
	}
	public = func() []byte { return card("1.0.0", "summarize") }
	extended = func() []byte { return card("2.0.0", "summarize", "audit-ledger") }
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		switch r.URL.Path {
		case "/.well-known/agent-card.json":
			_, _ = w.Write(public())
		case "/a2a":
			if got := r.Header.Get("Authorization"); got != "Bearer "+extSecret {
				http.Error(w, "token "+got+" not accepted", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, extended())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, public, extended
}

// TestReplayHTMLExtendedPin: the replay page of a task pinned on the
// extended card — recorded by a worker with credentials over an embedded
// JetStream — says so in the task's story (planned against the extended
// card), its pinned band and its entries, and carries no secret; the text
// story says it too.
func TestReplayHTMLExtendedPin(t *testing.T) {
	agent, _, extended := ledgerAgent(t)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, agent, extSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{Rig: servicetest.Start(t, servicetest.Options{Source: "urn:client:replay-test", Workers: []string{"replay-test-worker"},
		Worker: func(o *worker.Options) { o.Fetch.Credentials = creds }})}
	ctx := context.Background()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "ext", AgentURL: agent, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true}}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 1)
	extDigest, _ := detector.Digest(extended())
	tl, err := r.reader().Timeline(ctx, replay.Query{TaskID: "ext"})
	if err != nil {
		t.Fatal(err)
	}
	var page, text bytes.Buffer
	if err := tl.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if err := streamTimeline(tl, false)(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first-fetch, the extended card, pinned", "pinned " + extDigest + " (first-fetch, the extended card)"} {
		if !strings.Contains(html.UnescapeString(page.String()), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if want := "(first-fetch, the extended card, pinned"; !strings.Contains(text.String(), want) {
		t.Errorf("text story lacks %q:\n%s", want, text.String())
	}
	for what, out := range map[string]string{"page": page.String(), "text": text.String()} {
		if strings.Contains(out, extSecret) {
			t.Errorf("the secret is in the replay %s", what)
		}
	}
}
