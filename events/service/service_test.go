package service_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/budget"
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

// The embedded server lets carddrift's streams reserve their byte limits
// whatever the disk holds: nats-server's own default maximum is 75% of the
// disk free at start, so a machine with less free disk than the limits
// (here: limits larger than any disk) could not start serve. The streams
// hold only what is written; the limits are what they may grow to.
func TestEmbeddedReservesTheLimits(t *testing.T) {
	ctx := context.Background()
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		cfg := store.DefaultConfig()
		cfg.Partitions = 1
		cfg.Storage = storage
		cfg.StorageLimit = 64 << 40 // 64 TiB
		svc, err := service.Open(ctx, service.Options{DataDir: t.TempDir(), Config: cfg,
			Worker: worker.Options{Name: "reserve", Fetch: servicetest.LoopbackFetch()}})
		if err != nil {
			t.Fatalf("%v storage, limits of 64 TiB: Open() = %v", storage, err)
		}
		info, err := svc.JetStream().Stream(ctx, cfg.LifecycleStream)
		if err != nil {
			t.Fatal(err)
		}
		scfg := svc.Config()
		if got, want := info.CachedInfo().Config.MaxBytes, scfg.Limits()[cfg.LifecycleStream]; got != want {
			t.Errorf("%v storage: %s MaxBytes = %d, want %d", storage, cfg.LifecycleStream, got, want)
		}
		svc.Close()
	}
}

// A service under the smallest memory budget, flooded with large client
// cards and large pins on distinct tasks through its embedded JetStream:
// every task is pinned, and the pin cache and the parsed cards never count
// more than their shares (the count bounds, 100,000 pins and 1,024 cards,
// would have kept them all).
func TestServiceMemoryBudget(t *testing.T) {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.Partitions = 2
	svc, err := service.Open(ctx, service.Options{
		DataDir: t.TempDir(), Config: cfg, PinCache: 100_000, MemoryBudget: budget.Minimum,
		Worker: worker.Options{Name: "budget", Fetch: servicetest.LoopbackFetch(), DrainTimeout: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	running, err := svc.Start(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { running.Stop() })
	emit, err := client.NewEmitter(svc.JetStream(), "urn:test:budget")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	const agent = "http://127.0.0.1:9"
	const cards, pins = 24, 24
	for i := range cards {
		card := fmt.Sprintf(`{"name":"c%d","version":"1","url":%q,"skills":[{"id":"s","name":"s","tags":["t"]}],"description":"%s"}`,
			i, agent, strings.Repeat("d", 512<<10))
		if err := emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprintf("card-%d", i), AgentURL: agent, SkillID: "s", Card: []byte(card)}); err != nil {
			t.Fatal(err)
		}
	}
	scopes := map[string][]string{}
	for s := range 4 {
		for j := range 256 {
			scopes[fmt.Sprint("scheme-", s)] = append(scopes[fmt.Sprint("scheme-", s)], fmt.Sprintf("scope-%d-%s", j, strings.Repeat("s", 400)))
		}
	}
	for i := range pins {
		if err := emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprintf("pin-%d", i), AgentURL: agent, SkillID: "s",
			CardDigest: "sha256:" + strings.Repeat("0", 64), Requires: events.Requires{Scopes: scopes}}); err != nil {
			t.Fatal(err)
		}
	}
	servicetest.Flushed(t, emit, time.Minute)
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := svc.WaitDrained(dctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"card-0", fmt.Sprint("card-", cards-1), "pin-0", fmt.Sprint("pin-", pins-1)} {
		if _, _, err := svc.Stores().Pins.Get(ctx, id); err != nil {
			t.Errorf("task %s not pinned: %v", id, err)
		}
	}
	sh := budget.Split(budget.Minimum)
	m := svc.MemoryStats()
	t.Logf("memory stats: %+v; shares %+v", m, sh)
	if m.Pins.Bytes > int64(sh.Pins) || m.Pins.Evictions == 0 {
		t.Errorf("pin cache holds %d bytes after %d evictions, want at most %d (its share) and evictions", m.Pins.Bytes, m.Pins.Evictions, sh.Pins)
	}
	if m.CardBytes > int64(sh.Cards) || m.Cards == 0 || m.Cards >= cards {
		t.Errorf("card cache holds %d cards of %d bytes, want some but fewer than %d within %d (its share)", m.Cards, m.CardBytes, cards, sh.Cards)
	}
}

func TestPinSizeAndDetach(t *testing.T) {
	body := `{"name":"n","version":"` + strings.Repeat("v", 64) + `","url":"https://a.example","description":"` + strings.Repeat("d", 1<<19) + `"}`
	c, err := detector.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p := task.Pin{TaskID: "t", AgentURL: "https://a.example", CardVersion: c.Version, Reported: []string{"a", "b"},
		Requirements: detector.Requirements{Scopes: map[string][]string{"oauth": {strings.Repeat("s", 1000)}}}}
	size := service.PinSize(p)
	if min := int64(unsafe.Sizeof(p)) + 64 + 1000; size < min || size > min+4096 {
		t.Errorf("PinSize = %d, want about %d (the struct and its strings)", size, min)
	}
	d := service.DetachPin(p)
	if d.CardVersion != p.CardVersion || d.Requirements.Scopes["oauth"][0] != p.Requirements.Scopes["oauth"][0] || len(d.Reported) != 2 {
		t.Fatalf("DetachPin(p) = %+v, want p's content", d)
	}
	if unsafe.StringData(d.CardVersion) == unsafe.StringData(p.CardVersion) {
		t.Error("DetachPin(p).CardVersion shares the parsed card's memory")
	}
}

// TestPinSizeCoversHeap checks PinSize against the heap for pins as the
// cache keeps them (detached) with requirements near the payload limit.
func TestPinSizeCoversHeap(t *testing.T) {
	scopes := map[string][]string{}
	for s := range 7 {
		for j := range 256 {
			scopes[fmt.Sprint("scheme-", s)] = append(scopes[fmt.Sprint("scheme-", s)], fmt.Sprintf("scope-%d-%s", j, strings.Repeat("s", 384)))
		}
	}
	const n = 20
	var est int64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := make([]task.Pin, n)
	for i := range keep {
		keep[i] = service.DetachPin(task.Pin{TaskID: fmt.Sprint("t", i), Requirements: detector.Requirements{Scopes: scopes}})
		est += service.PinSize(keep[i])
	}
	runtime.GC()
	runtime.GC() // and the encoder's pooled buffer, which survives one
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(keep)
	t.Logf("%d pins of ~700 KiB requirements: live %d bytes, PinSize %d (%.2f)", n, live, est, float64(est)/float64(live))
	if live > est+est/20 {
		t.Errorf("%d pins keep %d bytes live, PinSize estimates %d: under by more than 5%%", n, live, est)
	}
}
