package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// Events queued behind a slow one of their task hold no more bytes than
// InflightBytes: the partition waits instead of taking more, every event is
// handled in the end, and the bytes all come back.
func TestInflightBytesBound(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 1 }})
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetDelay(1500 * time.Millisecond)
	const bound = 2 << 20
	w, err := worker.New(r.JS, r.WorkerOptions("inflight", func(o *worker.Options) { o.InflightBytes = bound }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
	<-w.Ready()

	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := w.Inflight(); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	// The task's first event fetches from the slow agent; the large ones
	// queue behind it (per-task order).
	pctx, pcancel := context.WithTimeout(ctx, time.Minute)
	defer pcancel()
	if err := r.Emit.Submitted(pctx, events.Submitted{TaskID: "slow", AgentURL: agent.URL(), SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit.Request(pctx, events.Request{TaskID: "slow", AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		card := fmt.Sprintf(`{"name":"c%d","url":%q,"skills":[{"id":"summarize","name":"s","tags":["t"]}],"description":"%s"}`,
			i, agent.URL(), strings.Repeat("d", 900<<10))
		if err := r.Emit.Submitted(pctx, events.Submitted{TaskID: "slow", AgentURL: agent.URL(), SkillID: "summarize", Card: []byte(card)}); err != nil {
			t.Fatal(err)
		}
	}
	r.Drained(t, time.Minute)
	close(stopSampling)
	<-sampled
	if p := peak.Load(); p > bound || p < 1<<20 {
		t.Errorf("peak in-flight bytes = %d, want between 1 MiB (the large events queued) and the bound %d", p, bound)
	}
	natstest.Eventually(t, 5*time.Second, "in-flight bytes back to 0", func() bool { return w.Inflight() == 0 })
	t.Logf("peak in-flight bytes %d (bound %d)", peak.Load(), bound)
}
