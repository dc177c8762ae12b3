package planner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestSubscribeUsesTouches: the impact comes from the touches the card.drift
// carries, before any store: a pin whose requirements would say otherwise is
// not read. Touches that contradict the action are not trusted, and a
// card.drift without touches (written before contract v1.1) falls back to
// the implied impact.
func TestSubscribeUsesTouches(t *testing.T) {
	js, _ := withJS(t)
	ctx := context.Background()
	a := "https://a.example"

	// The stores hold a pin of "streams" that does not stream: recomputing
	// from them would find no impact.
	pins, cards := memstore.NewPins[task.Pin](), memstore.NewCards()
	for _, c := range []cardSpec{v1, noStream, narrowedTr} {
		raw := c.JSON()
		if err := cards.Put(ctx, digest(t, raw), raw); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pins.Create(ctx, task.Pin{TaskID: "streams", AgentURL: a, Digest: digest(t, v1.JSON()),
		Requirements: detector.Requirements{SkillID: "echo", Posture: detector.FailClosed}}); err != nil {
		t.Fatal(err)
	}

	streams := drift(t, "streams", a, v1, noStream, streamEcho)
	contradicts := drift(t, "contradicts", a, v1, noStream, streamEcho)
	for i := range contradicts.Findings {
		contradicts.Findings[i].Touches = false // abort, yet nothing touches
	}
	legacyWarn := drift(t, "legacy-warning", a, v1, narrowedTr, streamEcho)

	all := &recorder{}
	subscribe(t, js, planner.Options{Durable: "touches", Pins: pins, Cards: cards}, all.handle)
	warn := &recorder{}
	subscribe(t, js, planner.Options{Durable: "touches-warning", MinSeverity: detector.Warning}, warn.handle)
	publish(t, js, streams, contradicts)
	publishLegacy(t, js, legacyWarn)
	natstest.Eventually(t, 10*time.Second, "three verdicts to each, durables idle", func() bool {
		return all.len() == 3 && warn.len() == 3 && consumerIdle(t, js, "touches") && consumerIdle(t, js, "touches-warning")
	})

	byTask := map[string]planner.Verdict{}
	for _, v := range all.got {
		byTask[v.TaskID] = v
	}
	if v := byTask["streams"]; !v.ImpactExact || v.Impact != detector.Breaking || len(v.Impacting) != 1 || v.Impacting[0].Rule != detector.RuleStreamingDisabled {
		t.Errorf("streams: exact %v impact %v impacting %v, want exact breaking streaming-disabled from the event's touches", v.ImpactExact, v.Impact, v.Impacting)
	}
	if v := byTask["contradicts"]; v.ImpactExact || v.Impact != detector.Breaking {
		t.Errorf("contradicts: exact %v impact %v, want the implied breaking impact of an abort", v.ImpactExact, v.Impact)
	}
	if v := byTask["legacy-warning"]; v.ImpactExact || v.Impact != detector.Warning {
		t.Errorf("legacy-warning: exact %v impact %v, want the implied warning (no pin in the stores)", v.ImpactExact, v.Impact)
	}
	// Without stores, MinSeverity warning keeps what may reach it: the
	// legacy continue with a breaking finding elsewhere is delivered.
	got := warn.tasks()
	slices.Sort(got)
	if want := []string{"contradicts", "legacy-warning", "streams"}; !slices.Equal(got, want) {
		t.Errorf("MinSeverity warning delivered %v, want %v", got, want)
	}
}
