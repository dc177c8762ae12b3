package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestTrafficHold: while Hold says so, no task starts (nothing is
// published: the publisher here has no methods) and Held counts the
// agents' tries.
func TestTrafficHold(t *testing.T) {
	f := startFleet(t, Options{Agents: 2, Seed: 1})
	sched, err := Schedule(1, f.Agents(), ScenarioNames()[:1], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTraffic(TrafficOptions{
		JetStream: noPublisher{}, Schedule: sched, Start: time.Now(), Duration: 10 * time.Second,
		TaskEvery: 50 * time.Millisecond, StepEvery: 10 * time.Millisecond, Steps: 1,
		Hold: func() bool { return true }, HoldPoll: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	tr.Run(ctx)
	if n := len(tr.Tasks()); n != 0 || tr.Sent() != 0 || tr.Errors() != 0 {
		t.Errorf("held traffic started %d tasks and published %d events (%d errors), want none", n, tr.Sent(), tr.Errors())
	}
	if tr.Held() == 0 {
		t.Error("Held() = 0 after holding every task")
	}
}

// noPublisher is a jetstream.Publisher without methods: a publish panics.
type noPublisher struct{ jetstream.Publisher }
