package worker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/topology"
)

const otherDrift = "card.drift-of-another-worker"

// TestPinWriteConflict: a worker whose pin write-back conflicts with
// another writer's does not report success; handled again, it re-reads the
// pin and applies the event on top of the other write, and neither is
// lost.
func TestPinWriteConflict(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 0 }})
	ctx := context.Background()
	pins := r.SecondWriter(r.Stores.Pins, "", otherDrift)
	w := r.NewWorker("conflict", func(o *worker.Options) { o.Pins = pins })
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	ev := func(seq int, d events.Data) events.Event {
		return events.Event{ID: "e" + string(rune('0'+seq)), Source: "urn:test", Type: d.EventType(), Time: time.Unix(int64(100+seq), 0), Data: d}
	}
	handle := func(seq int, d events.Data) error {
		_, err := worker.HandleAt(ctx, w, ev(seq, d), uint64(seq), time.Now())
		return err
	}
	must(t, handle(1, events.Submitted{TaskID: "c", AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.FailClosed,
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))

	schemaError := events.Error{TaskID: "c", AgentURL: agent.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"}
	pins.Arm()
	err := handle(2, schemaError)
	if !errors.Is(err, worker.ErrPinChanged) {
		t.Fatalf("handle with a conflicting pin write = %v, want ErrPinChanged", err)
	}
	if pins.Writes() != 1 {
		t.Fatalf("second writer wrote %d times, want 1", pins.Writes())
	}
	pin, _, err := r.Stores.Pins.Get(ctx, "c")
	must(t, err)
	if !pin.SchemaErrorAt.IsZero() {
		t.Fatalf("the conflicting write replaced the other writer's pin: %+v", pin)
	}

	// Handled again (process retries it; else a redelivery): applied on top.
	must(t, handle(2, schemaError))
	pin, _, err = r.Stores.Pins.Get(ctx, "c")
	must(t, err)
	if pin.SchemaErrorSeq != 2 || pin.SchemaErrorCode != -32602 || !slices.Contains(pin.Reported, otherDrift) {
		t.Fatalf("pin = schema error seq %d code %d, reported %v; want seq 2, code -32602 and the other writer's %q",
			pin.SchemaErrorSeq, pin.SchemaErrorCode, pin.Reported, otherDrift)
	}
}

// TestConsumerRedeliversWithoutLimit: a worker updates a lifecycle consumer
// made by an older release (MaxDeliver 10, the server's give-up) to
// unlimited deliveries: only the worker gives up on an event, by
// dead-lettering it.
func TestConsumerRedeliversWithoutLimit(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 2 }})
	ctx := context.Background()
	for _, cc := range r.Config.LifecycleConsumers() {
		cc.MaxDeliver = topology.DefaultMaxDeliver // as e91b0a3 made it
		cc.PriorityGroups = []string{"carddrift"}
		cc.PriorityPolicy = jetstream.PriorityPolicyPinned
		cc.PinnedTTL = 2 * time.Second
		if _, err := r.JS.CreateOrUpdateConsumer(ctx, r.Config.LifecycleStream, cc); err != nil {
			t.Fatal(err)
		}
	}
	r.StartWorker("upgrade", nil)
	for _, name := range r.Config.ConsumerNames() {
		c, err := r.JS.Consumer(ctx, r.Config.LifecycleStream, name)
		must(t, err)
		info, err := c.Info(ctx)
		must(t, err)
		if info.Config.MaxDeliver != -1 {
			t.Errorf("consumer %s: MaxDeliver %d after the worker started, want -1", name, info.Config.MaxDeliver)
		}
	}
}
