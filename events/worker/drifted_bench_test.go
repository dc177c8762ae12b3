package worker_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// BenchmarkDriftedTransition reports the worker's handling of a
// capability-dependent transition of a drifted task whose lease is fresh —
// the 400-agent mix's commonest event: read the pin, observe the live card
// (the shared lease), judge it against the pinned one, record what the
// core says. Two workers on one embedded JetStream take turns event by
// event, so machine noise hits both alike: "local" reads leases from its
// lease copy and diffs through its memo (the defaults), "store" reads every
// lease from the bucket and diffs every time (LeaseCopyBytes and
// DiffMemoBytes negative, what every transition cost before). Reported per
// event: wall time and process CPU (the embedded server's included) of
// each, and the ratios store/local.
//
//	go test ./events/worker -run '^$' -bench DriftedTransition -benchtime 2000x
func BenchmarkDriftedTransition(b *testing.B) {
	r := servicetest.Start(b, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 0 }})
	ctx := context.Background()
	agent := servicetest.NewAgent(b, servicetest.WriteupT40) // drifted from the pinned T0
	agent.SetCacheControl("max-age=3600")
	pinned := agent.Served(servicetest.WriteupT0)
	tweak := func(off bool) func(*worker.Options) {
		return func(o *worker.Options) {
			o.PinnedTTL, o.Fetch.MinLease, o.Fetch.MaxLease = 0, time.Hour, time.Hour
			if off {
				o.Fetch.LeaseCopyBytes, o.DiffMemoBytes = -1, -1
			}
		}
	}
	type side struct {
		name      string
		w         *worker.Worker
		task      string
		wall, cpu time.Duration
	}
	sides := []*side{
		{name: "local", w: r.NewWorker("local", tweak(false)), task: "local-task"},
		{name: "store", w: r.NewWorker("store", tweak(true)), task: "store-task"},
	}
	seq := uint64(0)
	handle := func(s *side, d events.Data) {
		seq++
		ev := events.Event{ID: fmt.Sprint(s.task, "-", seq), Source: "urn:bench", Type: d.EventType(), Time: time.Now(), Data: d}
		if _, err := worker.HandleAt(ctx, s.w, ev, seq, time.Now()); err != nil {
			b.Fatalf("%s: handle %s: %v", s.name, ev.Type, err)
		}
	}
	transition := func(s *side) events.Data {
		return events.Request{TaskID: s.task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}
	}
	for _, s := range sides {
		handle(s, events.Submitted{TaskID: s.task, AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.Degrade,
			Requires: events.Requires{Streaming: true}, Card: pinned})
		for range 3 { // the drift is published; the lease is fresh
			handle(s, transition(s))
		}
	}
	n := 0
	for b.Loop() {
		for _, s := range sides {
			c0, t0 := cpuTime(), time.Now()
			handle(s, transition(s))
			s.wall += time.Since(t0)
			s.cpu += cpuTime() - c0
		}
		n++
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	for _, s := range sides {
		b.ReportMetric(per(s.wall), s.name+"-ns/event")
		b.ReportMetric(per(s.cpu), s.name+"-cpu-ns/event")
	}
	b.ReportMetric(per(sides[1].wall)/per(sides[0].wall), "store/local-wall")
	b.ReportMetric(per(sides[1].cpu)/per(sides[0].cpu), "store/local-cpu")
	b.ReportMetric(0, "ns/op")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
