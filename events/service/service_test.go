package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// A service on its own embedded server: two workers consume, a submission
// is pinned, the backlog drains, Stop drains and returns nil, Close twice.
func TestServiceEmbedded(t *testing.T) {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	svc, err := service.Open(ctx, service.Options{
		DataDir: t.TempDir(), Config: cfg, Workers: 2,
		Worker: worker.Options{Name: "svc", Fetch: servicetest.LoopbackFetch(), DrainTimeout: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !svc.Embedded() || svc.URL() == "" {
		t.Fatalf("Embedded() = %v, URL() = %q; want an embedded server with a URL", svc.Embedded(), svc.URL())
	}
	running, err := svc.Start(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	emit, err := client.NewEmitter(svc.JetStream(), "urn:test:service")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	if err := emit.Submitted(ctx, events.Submitted{TaskID: "t1", AgentURL: agent.URL(), SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	out := servicetest.Collect(t, svc.JetStream(), svc.Config())
	out.WaitFor(t, "card.pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, "t1")) == 1 })
	servicetest.Flushed(t, emit, time.Minute)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := svc.WaitDrained(wctx); err != nil {
		t.Fatal(err)
	}
	scfg := svc.Config()
	if n, err := service.Backlog(ctx, svc.JetStream(), scfg.LifecycleStream, scfg.ConsumerNames()...); err != nil || n != 0 {
		t.Fatalf("Backlog() = %d, %v; want 0, nil", n, err)
	}
	sources := map[string]bool{}
	for _, ev := range out.All("") {
		sources[ev.Source] = true
	}
	if !sources["carddrift/svc-1"] && !sources["carddrift/svc-2"] {
		t.Errorf("event sources %v, want the workers svc-1 or svc-2", sources)
	}
	if err := running.Stop(); err != nil {
		t.Errorf("Stop() = %v, want nil", err)
	}
	if err := svc.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := svc.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

// Open fails on invalid worker options and leaves nothing running.
func TestOpenInvalidWorker(t *testing.T) {
	_, err := service.Open(context.Background(), service.Options{DataDir: t.TempDir(), Worker: worker.Options{}})
	if !errors.Is(err, service.ErrInvalidOptions) {
		t.Fatalf("Open with no worker name = %v, want ErrInvalidOptions", err)
	}
}
