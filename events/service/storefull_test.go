package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// fullTasks is how many tasks the full-store test drifts.
const fullTasks = 8

// A store that cannot write loses nothing: a server whose max_file_store
// another stream has used up refuses the verdicts and pins; the worker
// holds their events unacknowledged (not ready, saying why, the metric
// counting them), dead-letters nothing, and once space returns publishes
// every task's card.drift exactly once.
func TestStoreFullLosesNothing(t *testing.T) {
	srv, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 40 << 20 })
	ctx := t.Context()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	start := func(r *service.Readiness) (*service.Service, *service.Running) {
		t.Helper()
		svc, err := service.Open(ctx, smallOptions(connect(), r, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		running, err := svc.Start(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { running.Stop() })
		return svc, running
	}

	// Every task pinned on the card of T0.
	svc, running := start(nil)
	cfg := svc.Config()
	out := servicetest.Collect(t, js, cfg)
	emit, err := client.NewEmitter(js, "urn:test:store-full")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	task := func(i int) string { return fmt.Sprintf("full-%d", i) }
	for i := range fullTasks {
		if err := emit.Submitted(ctx, events.Submitted{TaskID: task(i), AgentURL: agent.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Posture: "fail-closed"}); err != nil {
			t.Fatal(err)
		}
	}
	out.WaitFor(t, "every task pinned", func(c *servicetest.Collector) bool { return len(c.All(events.TypePinned)) == fullTasks })
	if err := running.Stop(); err != nil {
		t.Fatal(err)
	}

	// The card drifts, every task calls the agent, then another tenant's
	// stream takes what is left of the server's storage.
	agent.Set(servicetest.WriteupT40)
	for i := range fullTasks {
		if err := emit.Request(ctx, events.Request{TaskID: task(i), AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TENANT", Subjects: []string{"tenant"}}); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 64<<10)
	for {
		_, err := js.Publish(ctx, "tenant", body)
		if err == nil {
			continue
		}
		if store.NoSpace(err) == "" {
			t.Fatalf("filling the store: %v", err)
		}
		break
	}

	// A worker starts on the full store: it holds the events, not ready.
	r := &service.Readiness{}
	svc, _ = start(r)
	natstest.Eventually(t, 60*time.Second, "not ready: store full", func() bool {
		return strings.HasPrefix(r.NotReady(), "store full: server storage full")
	})
	t.Logf("readiness while full: %q", r.NotReady())
	natstest.Eventually(t, 30*time.Second, "events held for space", func() bool { return gauge(t, svc.Metrics().HeldForSpace) > 0 })
	if n := len(out.All(events.TypeDrift)); n != 0 {
		t.Fatalf("%d card.drift published on a full store", n)
	}
	// Held through several AckWaits (2s): kept in progress, not redelivered
	// to be dead-lettered on its MaxDeliver-th delivery.
	deadline := time.Now().Add(3 * cfg.AckWait)
	natstest.Eventually(t, time.Minute, "three AckWaits on a full store", func() bool { return time.Now().After(deadline) })
	if got := dlqMessages(t, js, cfg); got != 0 {
		t.Fatalf("%d dead letters on a full store, want none", got)
	}
	for _, name := range cfg.ConsumerNames() {
		c, err := js.Consumer(ctx, cfg.LifecycleStream, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered != 0 {
			t.Errorf("consumer %s: %d events redelivered while held, want 0 (kept in progress)", name, info.NumRedelivered)
		}
	}

	// Space returns: every verdict, once.
	tenant, err := js.Stream(ctx, "TENANT")
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	out.WaitFor(t, "every task's card.drift", func(c *servicetest.Collector) bool { return len(c.All(events.TypeDrift)) >= fullTasks })
	servicetest.Flushed(t, emit, time.Minute)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := svc.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	out.CaughtUp(t)
	drifts := out.CountBy(events.TypeDrift)
	for i := range fullTasks {
		if drifts[task(i)] != 1 {
			t.Errorf("task %s: %d card.drift, want exactly 1 (all: %v)", task(i), drifts[task(i)], drifts)
		}
	}
	if got := dlqMessages(t, js, cfg); got != 0 {
		t.Errorf("%d dead letters, want none", got)
	}
	natstest.Eventually(t, 30*time.Second, "ready again", func() bool { return r.NotReady() == "" })
	if g := gauge(t, svc.Metrics().HeldForSpace); g != 0 {
		t.Errorf("carddrift_events_held_for_space = %v once space returned, want 0", g)
	}
	var refused dto.Metric
	if err := svc.Metrics().Refused.WithLabelValues("server storage full").Write(&refused); err != nil || refused.GetCounter().GetValue() == 0 {
		t.Errorf("carddrift_writes_refused_total{reason=server storage full} = %v, want > 0", refused.GetCounter().GetValue())
	}
}

func gauge(t *testing.T, g interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func dlqMessages(t *testing.T, js jetstream.JetStream, cfg store.Config) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
