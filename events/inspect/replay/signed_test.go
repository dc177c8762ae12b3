package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

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
