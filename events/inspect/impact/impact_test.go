package impact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
)

const agentURL = "https://vendor-b.example"

func card(raw string) []byte { return []byte(strings.ReplaceAll(raw, "AGENT", agentURL)) }

// pinOn makes the pin a worker makes of a client card.
func pinOn(t testing.TB, id, agent string, raw []byte, req detector.Requirements) task.Pin {
	t.Helper()
	s, err := task.Submit(events.Event{ID: "e-" + id, Type: events.TypeSubmitted, Time: time.Unix(1, 0)},
		events.Submitted{TaskID: id, AgentURL: agent, SkillID: req.SkillID, Card: raw, Posture: req.Posture, Idempotent: req.Idempotent,
			Requires: events.Requires{Streaming: req.Streaming}}, task.Meta{Time: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return *s.Pinned().Pin
}

func TestAssess(t *testing.T) {
	ctx := context.Background()
	pins, cards := memstore.NewPins[task.Pin](), memstore.NewCards()
	t0, t40 := card(servicetest.WriteupT0), card(servicetest.WriteupT40)
	d0, _ := detector.Digest(t0)
	must(t, cards.Put(ctx, d0, t0))
	for _, p := range []task.Pin{
		pinOn(t, "stream", agentURL, t0, detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}),
		pinOn(t, "degrade", agentURL+"/a2a", t0, detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.Degrade, Idempotent: true}),
		pinOn(t, "live-already", agentURL, t40, detector.Requirements{SkillID: "translate"}),
		pinOn(t, "other-agent", "https://vendor-c.example", t0, detector.Requirements{SkillID: "summarize", Streaming: true}),
		{TaskID: "pending", AgentURL: agentURL, Requirements: detector.Requirements{SkillID: "summarize"}},
		{TaskID: "unknown", AgentURL: agentURL, Digest: "sha256:" + strings.Repeat("0", 64), Source: events.PinClientDigest,
			Requirements: detector.Requirements{SkillID: "summarize", Posture: detector.FailClosed}},
	} {
		_, err := pins.Create(ctx, p)
		must(t, err)
	}
	rep, err := impact.Assess(ctx, impact.Source{Pins: pins, Cards: cards}, agentURL, t40, impact.Options{})
	must(t, err)
	want := map[string]detector.Action{"stream": detector.Abort, "degrade": detector.Replan, "live-already": detector.Continue,
		"pending": detector.Continue, "unknown": detector.Abort}
	var ids []string
	for _, tk := range rep.Tasks {
		ids = append(ids, tk.TaskID)
		if tk.Action != want[tk.TaskID] {
			t.Errorf("task %s: %s (%s), want %s", tk.TaskID, tk.Action, tk.Reason, want[tk.TaskID])
		}
	}
	if !slices.Equal(ids, []string{"degrade", "live-already", "pending", "stream", "unknown"}) {
		t.Errorf("tasks = %v", ids)
	}
	if rep.Counts != (impact.Counts{Abort: 2, Replan: 1, Continue: 2}) {
		t.Errorf("counts = %+v", rep.Counts)
	}
	b, _ := json.Marshal(rep)
	var shape map[string]any
	must(t, json.Unmarshal(b, &shape))
	task0 := shape["tasks"].([]any)[0].(map[string]any)
	f0 := task0["findings"].([]any)[0].(map[string]any)
	if len(shape) != 4 || len(task0) != 4 || len(f0) != 3 || len(shape["card"].(map[string]any)) != 1 || len(shape["counts"].(map[string]any)) != 3 {
		t.Errorf("JSON shape: %s", b)
	}
	if _, err := impact.Assess(ctx, impact.Source{Pins: pins, Cards: cards}, agentURL, []byte("[1]"), impact.Options{}); err == nil {
		t.Error("a proposed card that is not a card: no error")
	}
}

// TestAssess10000Pins measures impact for an agent with 10,000 live pins in
// a JetStream KV bucket (among 2,000 pins of other agents): one scan of the
// bucket, one parse per pinned card, the core's decision per pin.
func TestAssess10000Pins(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 12,000 pins")
	}
	ctx := context.Background()
	_, _, js := natstest.StartJetStream(t)
	st, err := store.Open[task.Pin](ctx, js, store.DefaultConfig())
	must(t, err)
	t0, t40 := card(servicetest.WriteupT0), card(servicetest.WriteupT40)
	d0, _ := detector.Digest(t0)
	must(t, st.Cards.Put(ctx, d0, t0))
	proto := []task.Pin{
		pinOn(t, "p", agentURL, t0, detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}),
		pinOn(t, "p", agentURL, t0, detector.Requirements{SkillID: "summarize", Posture: detector.Degrade, Idempotent: true}),
		pinOn(t, "p", agentURL, t0, detector.Requirements{SkillID: "summarize"}),
	}
	const n, others = 10_000, 2_000
	write := func(from, to int, agent string) {
		sem := make(chan struct{}, 64)
		errs := make(chan error, to-from)
		for i := from; i < to; i++ {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				p := proto[i%len(proto)].Clone()
				p.TaskID, p.AgentURL = fmt.Sprintf("task-%05d", i), agent
				_, err := st.Pins.Create(ctx, p)
				errs <- err
			}()
		}
		for i := from; i < to; i++ {
			must(t, <-errs)
		}
	}
	write(0, n, agentURL)
	write(n, n+others, "https://vendor-c.example")
	var best time.Duration
	for round := range 3 {
		start := time.Now()
		rep, err := impact.Assess(ctx, impact.Source{Pins: st.Pins, Cards: st.Cards}, agentURL, t40, impact.Options{})
		el := time.Since(start)
		must(t, err)
		if len(rep.Tasks) != n || rep.Counts.Abort+rep.Counts.Replan+rep.Counts.Continue != n || rep.Counts.Abort == 0 || rep.Counts.Replan == 0 {
			t.Fatalf("round %d: %d tasks, counts %+v", round, len(rep.Tasks), rep.Counts)
		}
		if round == 0 || el < best {
			best = el
		}
	}
	t.Logf("impact for %d pins (bucket of %d): %v (best of 3)", n, n+others, best.Round(time.Millisecond))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ledgerCard is a v1.0 card of the agent with the given streaming and
// skills (the public card has summarize; the extended card adds
// audit-ledger).
func ledgerCard(streaming bool, skills ...string) []byte {
	var s []string
	for _, id := range skills {
		s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
	}
	return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":"1.0.0",`+
		`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":%t,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
		agentURL, streaming, strings.Join(s, ","))
}

// extendedPin is the pin a worker makes for a task that uses the extended
// card: state is the card.pinned extended state (pinned: raw is the
// extended card; unavailable: the public card).
func extendedPin(t *testing.T, id string, raw []byte, state string, req detector.Requirements) task.Pin {
	t.Helper()
	s, err := task.Submit(events.Event{ID: "e-" + id, Type: events.TypeSubmitted, Time: time.Unix(1, 0)},
		events.Submitted{TaskID: id, AgentURL: agentURL, SkillID: req.SkillID, Card: raw, Posture: req.Posture,
			Requires: events.Requires{Streaming: req.Streaming, ExtendedCard: true}}, task.Meta{Time: time.Unix(1, 0)})
	must(t, err)
	s.UseExtended(state)
	return *s.Pinned().Pin
}

// TestAssessExtended: a proposed public card is never judged against a task
// pinned on the extended card (its transitions observe the extended card):
// that task is listed as not judged, not aborted for the skill only the
// extended card has. With Extended, the proposed card is an extended card:
// it judges those tasks, and the tasks on the public card — a task that
// uses the extended card but is pinned unavailable on the public card
// among them — are the ones not judged.
func TestAssessExtended(t *testing.T) {
	ctx := context.Background()
	pins, cards := memstore.NewPins[task.Pin](), memstore.NewCards()
	public, extended := ledgerCard(true, "summarize"), ledgerCard(true, "summarize", "audit-ledger")
	for _, p := range []task.Pin{
		extendedPin(t, "ext", extended, events.ExtendedPinned, detector.Requirements{SkillID: "audit-ledger", Posture: detector.FailClosed}),
		extendedPin(t, "unavailable", public, events.ExtendedUnavailable, detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}),
		pinOn(t, "plain", agentURL, public, detector.Requirements{SkillID: "summarize", Streaming: true, Posture: detector.FailClosed}),
	} {
		_, err := pins.Create(ctx, p)
		must(t, err)
		raw := public
		if p.Extended == events.ExtendedPinned {
			raw = extended
		}
		must(t, cards.Put(ctx, p.Digest, raw))
	}
	src := impact.Source{Pins: pins, Cards: cards}
	for _, tc := range []struct {
		name     string
		proposed []byte
		extended bool
		want     map[string]detector.Action
		skipped  map[string]string
	}{
		{
			name: "public card, streaming off", proposed: ledgerCard(false, "summarize"),
			want:    map[string]detector.Action{"plain": detector.Abort, "unavailable": detector.Abort},
			skipped: map[string]string{"ext": impact.SkipExtendedPin},
		},
		{
			name: "public card, unchanged", proposed: public,
			want:    map[string]detector.Action{"plain": detector.Continue, "unavailable": detector.Continue},
			skipped: map[string]string{"ext": impact.SkipExtendedPin},
		},
		{
			name: "extended card, audit-ledger withdrawn", proposed: ledgerCard(true, "summarize"), extended: true,
			want:    map[string]detector.Action{"ext": detector.Abort},
			skipped: map[string]string{"plain": impact.SkipPublicPin, "unavailable": impact.SkipPublicPin},
		},
		{
			name: "extended card, streaming off", proposed: ledgerCard(false, "summarize", "audit-ledger"), extended: true,
			want:    map[string]detector.Action{"ext": detector.Continue},
			skipped: map[string]string{"plain": impact.SkipPublicPin, "unavailable": impact.SkipPublicPin},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := impact.Assess(ctx, src, agentURL, tc.proposed, impact.Options{Extended: tc.extended})
			must(t, err)
			got := map[string]detector.Action{}
			for _, tk := range rep.Tasks {
				got[tk.TaskID] = tk.Action
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("judged tasks = %v, want %v", got, tc.want)
			}
			skipped := map[string]string{}
			for _, s := range rep.Skipped {
				skipped[s.TaskID] = s.Reason
			}
			if fmt.Sprint(skipped) != fmt.Sprint(tc.skipped) {
				t.Errorf("skipped = %v, want %v", skipped, tc.skipped)
			}
			var c impact.Counts
			for _, a := range tc.want {
				c.Add(a)
			}
			if rep.Counts != c {
				t.Errorf("counts = %+v, want %+v (the judged tasks only)", rep.Counts, c)
			}
		})
	}
}
