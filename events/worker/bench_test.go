package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// BenchmarkHealthyWhileAgentHangs reports the verdict latency of healthy
// tasks (their transition published → their card.drift received) while one
// agent's card endpoint hangs (it answers after 6 s, beyond the fetch
// timeout) and 40 of its tasks transition first, against the same healthy
// workload with no hanging agent, in the same run: p50 and p99 of both and
// the ratio of the p99s. The bar: healthy p99 < 250 ms while an agent hangs.
//
//	go test ./events/worker -run '^$' -bench HealthyWhileAgentHangs -benchtime 1x -count 3
func BenchmarkHealthyWhileAgentHangs(b *testing.B) {
	var base, hang []time.Duration
	for range b.N {
		base = append(base, healthyLatencies(b, false)...)
		hang = append(hang, healthyLatencies(b, true)...)
	}
	q := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(base, 0.5), "baseline-p50-ms")
	b.ReportMetric(q(base, 0.99), "baseline-p99-ms")
	b.ReportMetric(q(hang, 0.5), "hanging-p50-ms")
	b.ReportMetric(q(hang, 0.99), "hanging-p99-ms")
	b.ReportMetric(q(hang, 0.99)/q(base, 0.99), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

// healthyLatencies runs 80 healthy tasks on 8 agents whose cards turn
// streaming off, behind 40 tasks of a hanging agent when hang is set, and
// returns each healthy task's verdict latency.
func healthyLatencies(b *testing.B, hang bool) []time.Duration {
	b.Helper()
	r := servicetest.Start(b, servicetest.Options{
		Configure: func(c *store.Config) { c.Partitions = 8 },
		Workers:   []string{"w1"},
		Worker:    func(o *worker.Options) { o.Fetch.TotalTimeout = 3 * time.Second },
	})
	ctx := context.Background()
	const nHang, nAgents, perAgent = 40, 8, 10

	var mu sync.Mutex
	received := map[string]time.Time{}
	cons, err := r.JS.OrderedConsumer(ctx, r.Config.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		ev, err := events.Decode(m)
		if err != nil {
			return
		}
		if d, ok := ev.Data.(events.Drift); ok && strings.HasPrefix(d.TaskID, "ok-") {
			mu.Lock()
			if _, seen := received[d.TaskID]; !seen {
				received[d.TaskID] = time.Now()
			}
			mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()

	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-time.After(6 * time.Second):
		case <-req.Context().Done():
			return
		}
		fmt.Fprint(w, strings.ReplaceAll(servicetest.WriteupT0, "AGENT", "http://"+req.Host))
	}))
	defer hanging.Close()
	agents := make([]*servicetest.Agent, nAgents)
	for i := range agents {
		agents[i] = servicetest.NewAgent(b, servicetest.WriteupT0)
	}
	total := nAgents * perAgent
	if hang {
		total += nHang
		for i := range nHang {
			card := strings.ReplaceAll(servicetest.WriteupT0, "AGENT", hanging.URL)
			must(b, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("hang-", i), AgentURL: hanging.URL, SkillID: "summarize",
				Requires: events.Requires{Streaming: true}, Card: []byte(card)}))
		}
	}
	for i := range nAgents * perAgent {
		a := agents[i%nAgents]
		must(b, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("ok-", i), AgentURL: a.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: a.Served(servicetest.WriteupT0)}))
	}
	r.Eventually("every pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == total })

	for _, a := range agents {
		a.Set(servicetest.WriteupT40)
	}
	if hang {
		for i := range nHang {
			must(b, r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("hang-", i), AgentURL: hanging.URL, Method: "message/stream", Attempt: 1}))
		}
	}
	sent := make(map[string]time.Time, nAgents*perAgent)
	for i := range nAgents * perAgent {
		id := fmt.Sprint("ok-", i)
		sent[id] = time.Now()
		must(b, r.Emit.Request(ctx, events.Request{TaskID: id, AgentURL: agents[i%nAgents].URL(), Method: "message/stream", Attempt: 1}))
	}
	r.Eventually("every healthy verdict", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) == nAgents*perAgent
	})
	mu.Lock()
	defer mu.Unlock()
	out := make([]time.Duration, 0, len(sent))
	for id, at := range sent {
		out = append(out, received[id].Sub(at))
	}
	return out
}
