package impact_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/memstore"
)

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
