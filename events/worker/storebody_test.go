package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// refusingCards lets the first refusals Puts fail, as a full store or one
// slower than the fetcher's StoreTimeout does.
type refusingCards struct {
	store.Cards
	refusals atomic.Int64
}

func (c *refusingCards) Put(ctx context.Context, digest string, raw []byte) error {
	if c.refusals.Add(-1) >= 0 {
		return errors.New("insufficient storage")
	}
	return c.Cards.Put(ctx, digest, raw)
}

// A task pinned on the card the worker fetched names a body that is stored:
// when the store refuses the body, the submission is retried (not pinned on
// a digest no later transition could find — that would judge the task's
// next drift pinned-card-unknown, and replay could not re-evaluate it), and
// once the store takes it the pin is made and its body is there. Before,
// a body put that failed (a store refusing writes, or slower than the
// fetcher's StoreTimeout) was ignored and the task pinned anyway.
func TestPinNamesAStoredBody(t *testing.T) {
	cards := &refusingCards{}
	cards.refusals.Store(2)
	r := newRig(t, func(o *worker.Options) {
		cards.Cards = o.Cards
		o.Cards = cards
	})
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	ctx := context.Background()
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "stored", AgentURL: agent.URL(), SkillID: "summarize"}))
	r.Out().WaitFor(t, "the task's card.pinned", func(c *servicetest.Collector) bool {
		return len(c.Events(events.TypePinned, "stored")) > 0
	})
	pinned := r.Out().Events(events.TypePinned, "stored")[0].Data.(events.Pinned)
	if cards.refusals.Load() > 1 {
		t.Fatal("the store refused no put: the test did not exercise a refusal")
	}
	if _, err := r.Stores.Cards.Get(ctx, pinned.Digest); err != nil {
		t.Errorf("body of the pinned digest %s: %v, want it stored", pinned.Digest, err)
	}
}
