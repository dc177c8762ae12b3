package task

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

const (
	cardStreaming = `{"name":"A","version":"1","url":"https://a.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S"}]}`
	cardNoStream  = `{"name":"A","version":"1","url":"https://a.example.com/a2a","capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S"}]}`
	// The same card as cardStreaming in another form (v1.0 shape).
	cardStreamingV1 = `{"name":"A","version":"1","supportedInterfaces":[{"url":"https://a.example.com/a2a","protocolBinding":"JSONRPC"}],"capabilities":{"streaming":true,"extensions":[]},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"S","inputModes":[],"examples":[]}]}`
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type card struct {
	raw    string
	c      *detector.Card
	digest string
}

func mk(t *testing.T, raw string) card {
	t.Helper()
	c, err := detector.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	d, err := detector.Digest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return card{raw, c, d}
}

func (c card) obs(verified time.Time) Observation {
	return Observation{CardURL: "https://a.example.com/.well-known/agent-card.json", Digest: c.digest,
		Fingerprint: detector.Fingerprint(c.c), Card: c.c, FetchedAt: verified, VerifiedAt: verified}
}

func ev(typ string, d events.Data) events.Event {
	return events.Event{ID: "e-" + typ, Type: typ, Source: "client", Time: t0, Data: d}
}

func request(method string, attempt int) events.Event {
	return ev(events.TypeRequest, events.Request{TaskID: "t1", AgentURL: "https://a.example.com", Method: method, Attempt: attempt})
}

func pinOn(c card, req detector.Requirements) Pin {
	p := Pin{TaskID: "t1", AgentURL: "https://a.example.com", PinnedAt: t0, Source: events.PinClientCard, Requirements: req}
	p.fill(c.digest, "", c.c)
	return p
}

func drifts(r Result) []events.Drift {
	var out []events.Drift
	for _, d := range r.Publish {
		if d, ok := d.(events.Drift); ok {
			out = append(out, d)
		}
	}
	return out
}

func rules(d events.Drift) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Rule)
	}
	return out
}

func TestNeedsCard(t *testing.T) {
	tests := []struct {
		name string
		ev   events.Event
		want bool
	}{
		{"first send", request("message/send", 1), false},
		{"stream", request("message/stream", 1), true},
		{"v1.0 stream", request("SendStreamingMessage", 1), true},
		{"unknown method", request("vendor/magic", 1), true},
		{"retry of a send", request("message/send", 2), true},
		{"working", ev(events.TypeStatus, events.Status{TaskID: "t1", State: "working"}), false},
		{"completed", ev(events.TypeStatus, events.Status{TaskID: "t1", State: "TASK_STATE_COMPLETED"}), false},
		{"input-required", ev(events.TypeStatus, events.Status{TaskID: "t1", State: "input-required"}), true},
		{"unmodeled state", ev(events.TypeStatus, events.Status{TaskID: "t1", State: "paused-by-vendor"}), true},
		{"artifact", ev(events.TypeArtifact, events.Artifact{TaskID: "t1", MediaTypes: []string{"text/plain"}}), true},
		{"schema-class error", ev(events.TypeError, events.Error{TaskID: "t1", Code: -32602}), true},
		{"internal error", ev(events.TypeError, events.Error{TaskID: "t1", Code: -32603}), false},
		{"submission", ev(events.TypeSubmitted, events.Submitted{TaskID: "t1"}), true},
	}
	for _, tt := range tests {
		if got := NeedsCard(tt.ev); got != tt.want {
			t.Errorf("NeedsCard(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestTransitions: every rule of a transition's judgement, as a table.
func TestTransitions(t *testing.T) {
	streaming, noStream, v1 := mk(t, cardStreaming), mk(t, cardNoStream), mk(t, cardStreamingV1)
	streamTask := detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}
	tests := []struct {
		name        string
		pin         Pin
		ev          events.Event
		seq         uint64
		live        card
		wantForce   bool
		wantOutcome string
		wantAction  detector.Action
		wantRules   []string
		wantPinSave bool
	}{
		{name: "same card: unchanged", pin: pinOn(streaming, streamTask), ev: request("message/stream", 1), live: streaming,
			wantOutcome: OutcomeUnchanged},
		{name: "streaming off aborts a fail-closed streaming task", pin: pinOn(streaming, streamTask), ev: request("message/stream", 1), live: noStream,
			wantOutcome: OutcomeDrift, wantAction: detector.Abort, wantRules: []string{"streaming-disabled", "content-changed-without-version-bump"}, wantPinSave: true},
		{name: "streaming off continues a task that does not stream", pin: pinOn(streaming, detector.Requirements{SkillID: "summarize"}), ev: request("tasks/resubscribe", 1), live: noStream,
			wantOutcome: OutcomeDrift, wantAction: detector.Continue, wantRules: []string{"streaming-disabled", "content-changed-without-version-bump"}, wantPinSave: true},
		{name: "another form of the same card is no drift", pin: pinOn(streaming, streamTask), ev: request("message/stream", 1), live: v1,
			wantOutcome: OutcomeUnchanged, wantPinSave: true},
		{name: "a schema-class error forces an unconditional fetch and is recorded", pin: pinOn(streaming, streamTask), seq: 5,
			ev: ev(events.TypeError, events.Error{TaskID: "t1", Method: "message/stream", Code: -32602}), live: streaming,
			wantForce: true, wantOutcome: OutcomeUnchanged, wantPinSave: true},
		{name: "an undeclared artifact type forces a fetch and is a finding", pin: pinOn(streaming, streamTask),
			ev: ev(events.TypeArtifact, events.Artifact{TaskID: "t1", ArtifactID: "a1", MediaTypes: []string{"image/png"}}), live: streaming,
			wantForce: true, wantOutcome: OutcomeDrift, wantAction: detector.Abort, wantRules: []string{"artifact-type-undeclared"}, wantPinSave: true},
		{name: "an input request for an unknown skill forces a fetch", pin: pinOn(streaming, streamTask),
			ev: ev(events.TypeStatus, events.Status{TaskID: "t1", State: "input-required", SkillID: "translate"}), live: streaming,
			wantForce: true, wantOutcome: OutcomeDrift, wantAction: detector.Abort, wantRules: []string{"unmodeled-skill"}, wantPinSave: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinned := mk(t, cardStreaming).c
			tr := Begin(tt.ev, Meta{Seq: tt.seq, Time: t0.Add(time.Minute), Now: t0.Add(time.Minute)}, tt.pin, pinned)
			if tr == nil {
				t.Fatalf("Begin = nil, want a transition")
			}
			if tr.Force != tt.wantForce {
				t.Errorf("Force = %v (%s), want %v", tr.Force, tr.ForceReason, tt.wantForce)
			}
			r := tr.Judge(tt.live.obs(t0.Add(2 * time.Minute)))
			if r.Outcome != tt.wantOutcome {
				t.Fatalf("Outcome = %s, want %s", r.Outcome, tt.wantOutcome)
			}
			if (r.Pin != nil) != tt.wantPinSave || (r.Pin != nil && r.PinFirst) {
				t.Errorf("pin to save = %v (first %v), want save %v after publishing", r.Pin != nil, r.PinFirst, tt.wantPinSave)
			}
			ds := drifts(r)
			if tt.wantAction == "" {
				if len(ds) != 0 {
					t.Fatalf("published %+v, want no card.drift", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("published %d card.drift, want 1", len(ds))
			}
			got := rules(ds[0])
			want := slices.Clone(tt.wantRules)
			slices.Sort(got)
			slices.Sort(want)
			if ds[0].Verdict.Action != tt.wantAction || !slices.Equal(got, want) {
				t.Fatalf("card.drift = %s %v, want %s %v", ds[0].Verdict.Action, got, tt.wantAction, want)
			}
			for _, f := range ds[0].Findings {
				if f.Rule == "streaming-disabled" && f.Touches != tt.pin.Requirements.Streaming {
					t.Errorf("streaming-disabled touches = %v for a task with streaming %v", f.Touches, tt.pin.Requirements.Streaming)
				}
			}
		})
	}
}

// TestDriftOnce: the same drift is published once per pin, however often the
// transition comes again.
func TestDriftOnce(t *testing.T) {
	streaming, noStream := mk(t, cardStreaming), mk(t, cardNoStream)
	pin := pinOn(streaming, detector.Requirements{SkillID: "summarize", Streaming: true})
	r := Begin(request("message/stream", 1), Meta{Time: t0}, pin, streaming.c).Judge(noStream.obs(t0))
	if len(drifts(r)) != 1 || r.Pin == nil {
		t.Fatalf("first judgement = %+v, want one card.drift and a pin to save", r)
	}
	again := Begin(request("tasks/resubscribe", 1), Meta{Time: t0}, *r.Pin, streaming.c).Judge(noStream.obs(t0))
	if len(drifts(again)) != 0 || again.Outcome != OutcomeDrift {
		t.Fatalf("second judgement published %d card.drift (outcome %s), want none (already published)", len(drifts(again)), again.Outcome)
	}
}

// TestBlindRetryInAnyOrder: a retry after a schema-class error on a stale pin
// is a blind retry, whether the error or the retry is handled first (a
// redelivery may bring them out of stream order).
func TestBlindRetryInAnyOrder(t *testing.T) {
	streaming, noStream := mk(t, cardStreaming), mk(t, cardNoStream)
	pin := pinOn(streaming, detector.Requirements{SkillID: "summarize"})
	errEv := ev(events.TypeError, events.Error{TaskID: "t1", Method: "message/send", Code: -32602})
	retry := request("message/send", 2)

	// In order: error (seq 5), then retry (seq 6).
	r := Begin(errEv, Meta{Seq: 5, Time: t0}, pin, streaming.c).Judge(noStream.obs(t0))
	p := *r.Pin
	r = Begin(retry, Meta{Seq: 6, Time: t0}, p, streaming.c).Judge(noStream.obs(t0))
	if ds := drifts(r); len(ds) != 1 || !slices.Contains(rules(ds[0]), detector.RuleBlindRetry) {
		t.Fatalf("retry after the error: %+v, want a card.drift with blind-retry", ds)
	}

	// Out of order: the retry (seq 6) first, then the error (seq 5).
	r = Begin(retry, Meta{Seq: 6, Time: t0}, pin, streaming.c).Judge(noStream.obs(t0))
	if ds := drifts(r); len(ds) != 1 || slices.Contains(rules(ds[0]), detector.RuleBlindRetry) {
		t.Fatalf("retry before its error: %v, want drift without blind-retry", ds)
	}
	r = Begin(errEv, Meta{Seq: 5, Time: t0}, *r.Pin, streaming.c).Judge(noStream.obs(t0))
	if ds := drifts(r); len(ds) != 1 || !slices.Contains(rules(ds[0]), detector.RuleBlindRetry) {
		t.Fatalf("the error after its retry: %v, want the retry judged blind now", ds)
	}
}

// TestRecheck: an observation verified before the task was pinned cannot
// contradict the pin (issue: a stale lease aborted tasks pinned on the new
// card); one verified after it can; it asks once.
func TestRecheck(t *testing.T) {
	oldCard, newCard := mk(t, cardStreaming), mk(t, cardNoStream)
	pin := pinOn(newCard, detector.Requirements{SkillID: "summarize"}) // pinned at t0 on the new card
	tr := Begin(request("message/stream", 1), Meta{Time: t0.Add(time.Second)}, pin, newCard.c)
	if again, _ := tr.Recheck(oldCard.obs(t0.Add(-time.Second))); !again {
		t.Fatalf("Recheck(old card verified before the pin) = false, want an unconditional fetch")
	}
	if again, _ := tr.Recheck(oldCard.obs(t0.Add(-time.Second))); again {
		t.Fatalf("Recheck asked twice for one transition")
	}
	tr = Begin(request("message/stream", 1), Meta{Time: t0.Add(time.Second)}, pin, newCard.c)
	if again, _ := tr.Recheck(oldCard.obs(t0.Add(time.Second))); again {
		t.Fatalf("Recheck(old card verified after the pin) = true: a full fetch after the pin is authoritative")
	}
	if again, _ := tr.Recheck(newCard.obs(t0.Add(-time.Hour))); again {
		t.Fatalf("Recheck(the pinned card itself) = true")
	}
	// A task pinned on the old card after carddrift saw the old card
	// replaced by the new one: the observation is newer than the pinned
	// card, whenever the client pinned it — no extra fetch.
	oldPin := pinOn(oldCard, detector.Requirements{SkillID: "summarize"})
	tr2 := Begin(request("message/stream", 1), Meta{Time: t0.Add(time.Second)}, oldPin, oldCard.c)
	seenNew := newCard.obs(t0.Add(-time.Second))
	seenNew.Seen = []detector.Sighting{
		{Digest: oldCard.digest, FirstSeen: t0.Add(-time.Hour), LastSeen: t0.Add(-2 * time.Second)},
		{Digest: newCard.digest, FirstSeen: t0.Add(-2 * time.Second), LastSeen: t0.Add(-time.Second)},
	}
	if again, _ := tr2.Recheck(seenNew); again {
		t.Fatalf("Recheck = true although carddrift saw the pinned card replaced by the observed one")
	}
	// ...but if the pinned card came back after the observed one, it may be
	// live again: recheck.
	seenNew.Seen[0].LastSeen = t0.Add(-500 * time.Millisecond)
	if again, _ := tr2.Recheck(seenNew); !again {
		t.Fatalf("Recheck = false although the pinned card was seen after the observed one")
	}

	// After the recheck the fresh observation shows the new card: no drift.
	r := tr.Judge(newCard.obs(t0.Add(2 * time.Second)))
	if r.Outcome != OutcomeUnchanged || len(r.Publish) != 0 {
		t.Fatalf("Judge after the recheck = %s %v, want unchanged", r.Outcome, r.Publish)
	}
}

func TestPendingPinCompletes(t *testing.T) {
	live := mk(t, cardStreaming)
	pin := Pin{TaskID: "t1", AgentURL: "https://a.example.com", Source: events.PinFirstFetch, PinnedAt: t0}
	tr := Begin(request("message/stream", 1), Meta{Time: t0}, pin, nil)
	r := tr.Judge(live.obs(t0))
	if r.Outcome != OutcomePinned || r.Pin == nil || r.Pin.Digest != live.digest || r.Pin.Fingerprint == "" {
		t.Fatalf("completing a pending pin = %+v", r)
	}
	if len(r.Publish) != 1 {
		t.Fatalf("published %v, want card.pinned", r.Publish)
	}
	if _, ok := r.Publish[0].(events.Pinned); !ok {
		t.Fatalf("published %T, want events.Pinned", r.Publish[0])
	}
}

func TestFailIsUnreachableNotDrift(t *testing.T) {
	streaming := mk(t, cardStreaming)
	pin := pinOn(streaming, detector.Requirements{SkillID: "summarize"})
	r := Begin(ev(events.TypeError, events.Error{TaskID: "t1", Code: -32602}), Meta{Seq: 3, Time: t0, Now: t0}, pin, streaming.c).
		Fail(Failure{CardURL: "https://a.example.com/.well-known/agent-card.json", Reason: "timeout", Detail: strings.Repeat("x", 600)})
	if r.Outcome != OutcomeUnreachable || len(r.Publish) != 1 {
		t.Fatalf("Fail = %+v", r)
	}
	u, ok := r.Publish[0].(events.Unreachable)
	if !ok || u.Reason != "timeout" || u.TaskID != "t1" || len(u.Detail) != 512 {
		t.Fatalf("card.unreachable = %+v", r.Publish[0])
	}
	if r.Pin == nil || r.Pin.SchemaErrorSeq != 3 {
		t.Fatalf("the schema-class error must be recorded even when the fetch fails: %+v", r.Pin)
	}
}

// TestSubmissions: how a pin is made.
func TestSubmissions(t *testing.T) {
	streaming, noStream := mk(t, cardStreaming), mk(t, cardNoStream)
	sub := func(d events.Submitted) events.Event {
		d.TaskID, d.AgentURL, d.SkillID = "t1", "https://a.example.com", "summarize"
		return ev(events.TypeSubmitted, d)
	}
	m := Meta{Seq: 9, Time: t0, Now: t0}

	t.Run("client card", func(t *testing.T) {
		s, err := Submit(sub(events.Submitted{Card: []byte(cardStreaming)}), sub(events.Submitted{Card: []byte(cardStreaming)}).Data.(events.Submitted), m)
		if err != nil || s.NeedsObservation() {
			t.Fatalf("Submit = %v, needs observation %v", err, s.NeedsObservation())
		}
		r := s.Pinned()
		if r.StoreCard == nil || r.StoreCard.Digest != streaming.digest || !r.PinFirst || r.Pin.SubmittedSeq != 9 || r.Pin.Requirements.Posture != detector.FailClosed {
			t.Fatalf("Pinned = %+v", r)
		}
	})
	t.Run("client card that is not a card", func(t *testing.T) {
		d := events.Submitted{TaskID: "t1", AgentURL: "https://a.example.com", Card: []byte(`[1,2]`)}
		if _, err := Submit(ev(events.TypeSubmitted, d), d, m); err == nil {
			t.Fatalf("Submit of a JSON array as card = nil error")
		}
	})
	t.Run("client digest of the live card", func(t *testing.T) {
		d := sub(events.Submitted{CardDigest: streaming.digest}).Data.(events.Submitted)
		s, _ := Submit(sub(d), d, m)
		o := streaming.obs(t0)
		if s.NeedsBody(&o) != "" {
			t.Fatalf("NeedsBody for the live digest")
		}
		r := s.Observed(&o, nil, nil)
		if r.Outcome != OutcomePinned || r.Pin.Fingerprint == "" || len(drifts(r)) != 0 {
			t.Fatalf("Observed = %+v", r)
		}
	})
	t.Run("client digest carddrift never saw, card rotated: pinned-card-unknown", func(t *testing.T) {
		for _, tc := range []struct {
			posture    detector.Posture
			idempotent bool
			want       detector.Action
		}{
			{detector.FailClosed, true, detector.Abort},
			{detector.Degrade, true, detector.Replan},
			{detector.Degrade, false, detector.Abort},
		} {
			d := sub(events.Submitted{CardDigest: "sha256:" + strings.Repeat("0", 64), Posture: tc.posture, Idempotent: tc.idempotent}).Data.(events.Submitted)
			s, _ := Submit(sub(d), d, m)
			o := noStream.obs(t0)
			if s.NeedsBody(&o) == "" {
				t.Fatalf("NeedsBody = \"\" for a digest that is not the live one")
			}
			r := s.Observed(&o, nil, nil)
			ds := drifts(r)
			if len(ds) != 1 || ds[0].Verdict.Action != tc.want || !slices.Equal(rules(ds[0]), []string{detector.RulePinnedCardUnknown}) {
				t.Fatalf("%s idempotent=%v: drifts %+v, want one %s with pinned-card-unknown", tc.posture, tc.idempotent, ds, tc.want)
			}
			if r.Pin.Fingerprint != "" || ds[0].Pinned.Fingerprint != "" {
				t.Fatalf("a pin whose body is unknown has a fingerprint: %+v", r.Pin)
			}
			p, ok := r.Publish[0].(events.Pinned)
			if !ok || p.Fingerprint != "" || p.Source != events.PinClientDigest {
				t.Fatalf("first published %+v, want card.pinned without fingerprint", r.Publish[0])
			}
		}
	})
	t.Run("first fetch", func(t *testing.T) {
		d := sub(events.Submitted{}).Data.(events.Submitted)
		s, _ := Submit(sub(d), d, m)
		if !s.NeedsObservation() {
			t.Fatalf("a first-fetch pin needs an observation")
		}
		if !s.Recheck(streaming.obs(t0.Add(-time.Minute))) {
			t.Fatalf("a lease verified before the submission must be revalidated for a first-fetch pin")
		}
		o := streaming.obs(t0.Add(time.Second))
		r := s.Observed(&o, nil, nil)
		if r.Pin.Digest != streaming.digest || r.Pin.Source != events.PinFirstFetch || r.Outcome != OutcomePinned {
			t.Fatalf("Observed = %+v", r)
		}
	})
	t.Run("first fetch failed: pending pin and card.unreachable", func(t *testing.T) {
		d := sub(events.Submitted{}).Data.(events.Submitted)
		s, _ := Submit(sub(d), d, m)
		r := s.Observed(nil, &Failure{Reason: "connect"}, nil)
		if r.Outcome != OutcomeUnreachable || !r.Pin.Pending() || len(r.Publish) != 1 {
			t.Fatalf("Observed(failure) = %+v", r)
		}
	})
}

func TestReplaces(t *testing.T) {
	for _, tc := range []struct {
		existing, incoming uint64
		want               bool
	}{{5, 7, true}, {7, 5, false}, {7, 7, true}, {7, 0, true}, {0, 3, true}} {
		if got := Replaces(Pin{SubmittedSeq: tc.existing}, Pin{SubmittedSeq: tc.incoming}); got != tc.want {
			t.Errorf("Replaces(existing seq %d, incoming %d) = %v, want %v", tc.existing, tc.incoming, got, tc.want)
		}
	}
}

// Decide's Policy: a posture that replaces the task's own, and a rule set
// applied before the verdict — what replay --reevaluate and the planner's
// WithPosture hand in; the zero Policy is the worker's default.
func TestDecidePolicy(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	pin := Pin{TaskID: "t", Digest: a.digest, Requirements: detector.Requirements{SkillID: "summarize", Streaming: true, Idempotent: true}}
	obs := b.obs(t0)
	soften, err := detector.ParseRuleSet(strings.NewReader(`{"severity":{"streaming-disabled":"warning"}}`))
	if err != nil {
		t.Fatal(err)
	}
	drop, err := detector.ParseRuleSet(strings.NewReader(`{"disable":["streaming-disabled"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		p      Policy
		action detector.Action
		kept   bool // streaming-disabled among the findings
	}{
		{"the task's posture (fail-closed)", Policy{}, detector.Abort, true},
		{"posture replaced", Policy{Posture: detector.Degrade}, detector.Replan, true},
		{"re-graded to a warning", Policy{Rules: soften}, detector.Continue, true},
		{"disabled", Policy{Rules: drop}, detector.Continue, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(pin, a.c, obs, nil, tt.p)
			if d.Verdict.Action != tt.action || !d.Drift() {
				t.Fatalf("Decide = %s (%s), drift %t; want %s, a drift",
					d.Verdict.Action, d.Verdict.Reason, d.Drift(), tt.action)
			}
			if kept := slices.Contains(detector.RuleIDs(d.Findings), detector.RuleStreamingDisabled); kept != tt.kept {
				t.Errorf("findings %v: streaming-disabled kept %t, want %t", detector.RuleIDs(d.Findings), kept, tt.kept)
			}
		})
	}
	// The pinned card itself, unsigned, with nothing else to judge: not
	// compared, and the verdict is continue.
	if d := Decide(pin, a.c, a.obs(t0), nil, Policy{}); d.Compared || d.Verdict.Action != detector.Continue || len(d.Findings) != 0 {
		t.Errorf("Decide(pinned card) = %+v, want not compared, continue", d)
	}
}

// A memo of diffs never changes a decision: Decide with Policy.Diffs (a
// miss, then hits) is Decide without it, under every policy, with and
// without task findings — and what one decision does to its findings does
// not reach the next.
func TestDecideWithDiffMemo(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	soften, err := detector.ParseRuleSet(strings.NewReader(`{"severity":{"streaming-disabled":"warning"}}`))
	if err != nil {
		t.Fatal(err)
	}
	memo := detector.NewDiffMemo(1 << 20)
	task := []detector.Finding{{Rule: detector.RuleBlindRetry, Severity: detector.Warning, Message: "retried"}}
	for _, req := range []detector.Requirements{
		{SkillID: "summarize", Streaming: true, Idempotent: true},
		{SkillID: "summarize"},
	} {
		pin := Pin{TaskID: "t", Digest: a.digest, Requirements: req}
		for _, p := range []Policy{{}, {Posture: detector.Degrade}, {Rules: soften}} {
			for _, tf := range [][]detector.Finding{nil, task} {
				want := Decide(pin, a.c, b.obs(t0), tf, p)
				p.Diffs = memo
				for call := range 3 {
					got := Decide(pin, a.c, b.obs(t0), tf, p)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("req %+v policy %+v call %d: with the memo %+v, want %+v", req, p, call, got, want)
					}
					for i := range got.Findings { // a caller's changes stay its own
						got.Findings[i].Touches = !got.Findings[i].Touches
						got.Findings[i].Message = "changed"
					}
				}
				p.Diffs = nil
			}
		}
	}
	if memo.Len() != 1 {
		t.Errorf("memo holds %d pairs, want the one", memo.Len())
	}
}

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

// While an agent's replicas disagree, card.drift carries replicas-disagree
// (a warning: the action is what the cards alone decide); the pinned card
// seen again publishes nothing, split brain or not.
func TestReplicasDisagreeRidesWithDrift(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	req := detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}
	split := func(o Observation) Observation {
		o.Disagreeing, o.Window = []string{a.digest, b.digest}, 2*time.Minute
		return o
	}
	for _, tc := range []struct {
		name   string
		obs    Observation
		rules  []string // nil: no card.drift
		action detector.Action
	}{
		{"other card, one replica", b.obs(t0.Add(time.Second)), []string{detector.RuleStreamingDisabled}, detector.Abort},
		{"other card, replicas disagree", split(b.obs(t0.Add(time.Second))), []string{detector.RuleReplicasDisagree, detector.RuleStreamingDisabled}, detector.Abort},
		{"pinned card, replicas disagree", split(a.obs(t0.Add(time.Second))), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Begin(request("message/stream", 1), Meta{Seq: 2, Time: t0, Now: t0}, pinOn(a, req), a.c)
			r := tr.Judge(tc.obs)
			ds := drifts(r)
			if tc.rules == nil {
				if len(ds) != 0 {
					t.Fatalf("Judge published %v, want nothing", rules(ds[0]))
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("Judge published %d card.drift, want 1", len(ds))
			}
			got := rules(ds[0])
			for _, want := range tc.rules {
				if !slices.Contains(got, want) {
					t.Errorf("rules = %v, want %v among them", got, want)
				}
			}
			if ds[0].Verdict.Action != tc.action {
				t.Errorf("action = %s, want %s", ds[0].Verdict.Action, tc.action)
			}
		})
	}
}

// Assess is Judge without the bookkeeping: the same findings and verdict,
// even for a drift the pin already reported, and nothing for a pending pin
// or the pinned card.
func TestAssessIsJudge(t *testing.T) {
	a, b := mk(t, cardStreaming), mk(t, cardNoStream)
	for _, req := range []detector.Requirements{
		{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed},
		{SkillID: "summarize", Streaming: true, Posture: detector.Degrade, Idempotent: true},
		{SkillID: "summarize", Posture: detector.FailClosed},
	} {
		pin := pinOn(a, req)
		r := Begin(request("message/stream", 1), Meta{Seq: 2, Time: t0, Now: t0}, pin, a.c).Judge(b.obs(t0.Add(time.Second)))
		ds := drifts(r)
		fs, v, ok := Assess(pin, a.c, b.obs(t0.Add(time.Second)), Meta{Now: t0})
		if !ok || len(ds) != 1 || v.Action != ds[0].Verdict.Action || v.Reason != ds[0].Verdict.Reason || !slices.Equal(rules(ds[0]), rulesOf(fs)) {
			t.Errorf("%+v: Assess = %v %v %v, Judge published %+v", req, rulesOf(fs), v, ok, ds)
		}
		// Reported already: Judge publishes nothing, Assess still says.
		if _, v2, ok := Assess(*r.Pin, a.c, b.obs(t0.Add(time.Second)), Meta{Now: t0}); !ok || v2.Action != v.Action {
			t.Errorf("Assess after the drift was reported = %v %v", v2, ok)
		}
	}
	if _, _, ok := Assess(pinOn(a, detector.Requirements{}), a.c, a.obs(t0), Meta{Now: t0}); ok {
		t.Errorf("Assess of the pinned card = drift")
	}
	if _, _, ok := Assess(Pin{TaskID: "t1"}, nil, b.obs(t0), Meta{Now: t0}); ok {
		t.Errorf("Assess of a pending pin = drift")
	}
}

func rulesOf(fs []detector.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// TestCloneCoversReferenceFields fails when Pin gains a field that shares
// memory (slice, map, pointer) which Clone does not copy: the pin cache
// hands out clones.
func TestCloneCoversReferenceFields(t *testing.T) {
	known := map[string]bool{
		"Requirements.InputModes":  true,
		"Requirements.OutputModes": true,
		"Requirements.Security":    true,
		"Requirements.Scopes":      true,
		"Requirements.Extensions":  true,
		"Reported":                 true,
		"Signatures":               true,
	}
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := prefix + f.Name
			switch f.Type.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				if !known[name] {
					t.Errorf("Pin.%s is a %s: teach Pin.Clone to copy it", name, f.Type.Kind())
				}
			case reflect.Struct:
				if f.Type.PkgPath() != "time" {
					walk(f.Type, name+".")
				}
			}
		}
	}
	walk(reflect.TypeOf(Pin{}), "")

	p := Pin{TaskID: "t", Reported: []string{"a"}, Signatures: []detector.Signature{{KeyID: "k"}}, Requirements: detector.Requirements{
		InputModes: []string{"x"}, OutputModes: []string{"y"}, Security: []string{"s"},
		Scopes: map[string][]string{"s": {"r"}}, Extensions: []string{"e"},
	}}
	c := p.Clone()
	c.Signatures[0].KeyID = "!"
	c.Reported[0], c.Requirements.InputModes[0], c.Requirements.OutputModes[0] = "!", "!", "!"
	c.Requirements.Security[0], c.Requirements.Extensions[0], c.Requirements.Scopes["s"][0] = "!", "!", "!"
	if !reflect.DeepEqual(p, Pin{TaskID: "t", Reported: []string{"a"}, Signatures: []detector.Signature{{KeyID: "k"}}, Requirements: detector.Requirements{
		InputModes: []string{"x"}, OutputModes: []string{"y"}, Security: []string{"s"},
		Scopes: map[string][]string{"s": {"r"}}, Extensions: []string{"e"},
	}}) {
		t.Fatalf("changing a clone changed the original: %+v", p)
	}
}

// TestPinRecordFormat: the pin's JSON is the KV record; its field names are
// those of the records carddrift wrote before the task core existed, so a
// store written by an older version still reads.
func TestPinRecordFormat(t *testing.T) {
	old := `{"taskId":"t1","agentUrl":"https://a","cardUrl":"https://a/.well-known/agent-card.json","digest":"sha256:aa","fingerprint":"sha256:bb","pinnedAt":"2026-01-02T03:04:05Z","source":"client-card","requirements":{"skillId":"s","streaming":true,"posture":"fail-closed"},"schemaErrorAt":"2026-01-02T03:05:00Z","schemaErrorCode":-32602,"submittedSeq":7,"schemaErrorSeq":9,"retrySeq":11,"retryMethod":"message/send","retryAttempt":2,"liveDigest":"sha256:cc","reported":["x"]}`
	var p Pin
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	want := Pin{
		TaskID: "t1", AgentURL: "https://a", CardURL: "https://a/.well-known/agent-card.json",
		Digest: "sha256:aa", Fingerprint: "sha256:bb", PinnedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Source: "client-card", Requirements: detector.Requirements{SkillID: "s", Streaming: true, Posture: detector.FailClosed},
		SchemaErrorAt: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC), SchemaErrorCode: -32602,
		SubmittedSeq: 7, SchemaErrorSeq: 9, RetrySeq: 11, RetryMethod: "message/send", RetryAttempt: 2,
		LiveDigest: "sha256:cc", Reported: []string{"x"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded %+v\nwant    %+v", p, want)
	}
}

// TestDetachSharesNoMemory: every string of a detached pin is a copy, in
// every field, slice and map (keys too), and the content is the same.
func TestDetachSharesNoMemory(t *testing.T) {
	body := strings.Repeat("b", 64)
	s := func(i int) string { return body[i : i+1] } // slices of body
	p := Pin{TaskID: s(0), AgentURL: s(1), CardURL: s(2), Digest: s(3), Fingerprint: s(4), CardVersion: s(5),
		ProtocolVersion: s(6), ETag: s(7), Source: s(8), Extended: s(9), RetryMethod: s(10), LiveDigest: s(11),
		Reported: []string{s(12)}, Signatures: []detector.Signature{{KeyID: s(13), Alg: s(14), Reason: s(15)}},
		Requirements: detector.Requirements{SkillID: s(16), InputModes: []string{s(17)}, OutputModes: []string{s(18)},
			Security: []string{s(19)}, Scopes: map[string][]string{s(20): {s(21)}}, Extensions: []string{s(22)}, Posture: detector.Posture(s(23))}}
	d := p.Detach()
	if !reflect.DeepEqual(d, p) {
		t.Fatalf("Detach() = %+v, want %+v", d, p)
	}
	lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(body))), uintptr(unsafe.Pointer(unsafe.StringData(body)))+uintptr(len(body))
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.String:
			if at := uintptr(unsafe.Pointer(unsafe.StringData(v.String()))); at >= lo && at < hi {
				t.Errorf("Detach().%s shares the original's memory", path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), path+"."+v.Type().Field(i).Name)
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i), path+"[]")
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Key(), path+" key")
				walk(it.Value(), path+"[key]")
			}
		}
	}
	walk(reflect.ValueOf(d), "")
}
