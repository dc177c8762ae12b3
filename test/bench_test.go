package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/natstest"
)

// Performance of the worker (the quality bars: README, figures): throughput of events
// that need no fetch against raw JetStream consume+ack of the same messages
// in the same run, and detection latency and fetch amplification with
// fetches.
//
//	go test ./test -run '^$' -bench . -benchtime 1x

const (
	throughputEvents = 20000
	throughputTasks  = 64
)

// BenchmarkWorkerThroughput pre-publishes the same no-fetch events (status
// working, tasks/get attempt 1, for pinned tasks; binary mode, as the
// Emitter sends them) to the lifecycle stream and to a raw stream with the
// same configuration, then times one real worker draining the first against
// consumers that only ack the second: a plain durable pull consumer over the
// whole stream (the baseline of the "ratio" goal, ≥ 0.5), and, for
// reference, one durable per partition with the worker's consumer settings.
// Each iteration runs two rounds on fresh servers, worker first in one and
// raw first in the other, so that neither side gets the warmer server.
func BenchmarkWorkerThroughput(b *testing.B) {
	var worker, single, parts time.Duration
	var total int
	for range b.N {
		for round := range 2 {
			b.StopTimer()
			w, s, p := throughputRound(b, round == 1)
			b.StartTimer()
			worker += w
			single += s
			parts += p
			total += throughputEvents
		}
	}
	rate := func(d time.Duration) float64 { return float64(total) / d.Seconds() }
	b.ReportMetric(rate(worker), "worker-events/s")
	b.ReportMetric(rate(single), "raw-events/s")
	b.ReportMetric(rate(parts), "raw-partitioned-events/s")
	b.ReportMetric(rate(worker)/rate(single), "ratio")
	b.ReportMetric(rate(worker)/rate(parts), "ratio-vs-partitioned")
	b.ReportMetric(0, "ns/op")
	if r := rate(worker) / rate(single); r < 0.5 {
		b.Logf("ratio %.2f below the 0.5 goal", r)
	}
}

// throughputRound runs one side-by-side measurement on a fresh server and
// returns how long the worker, the single raw consumer and the partitioned
// raw consumers each took for throughputEvents events.
func throughputRound(b *testing.B, workerFirst bool) (workerTook, singleTook, partsTook time.Duration) {
	r := newRig(b, testConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Tasks with pins, written straight into the pin store (a worker that
	// pinned them would hold the partitions for PinnedTTL after it stops).
	agentURL := "http://127.0.0.1:9" // never fetched
	card := []byte(strings.ReplaceAll(writeupT0, "AGENT", agentURL))
	parsed, err := detector.Parse(card)
	must(b, err)
	digest, err := detector.Digest(card)
	must(b, err)
	must(b, r.stores.Cards.Put(ctx, digest, card))
	for i := range throughputTasks {
		if _, err := r.stores.Pins.Create(ctx, task.Pin{
			TaskID: fmt.Sprintf("tp-%d", i), AgentURL: agentURL, Digest: digest,
			Fingerprint: detector.Fingerprint(parsed), CardVersion: parsed.Version, PinnedAt: time.Now().UTC(),
			Source: events.PinClientCard, Requirements: detector.Requirements{SkillID: "summarize", Posture: detector.FailClosed},
		}); err != nil {
			b.Fatal(err)
		}
	}

	// The same message bytes for both streams.
	msgs := make([]*nats.Msg, throughputEvents)
	now := time.Now()
	for i := range msgs {
		task := fmt.Sprintf("tp-%d", i%throughputTasks)
		var d events.Data
		switch i % 3 {
		case 0:
			d = events.Status{TaskID: task, AgentURL: agentURL, State: "working"}
		case 1:
			d = events.Request{TaskID: task, AgentURL: agentURL, Method: "tasks/get", Attempt: 1}
		default:
			d = events.Status{TaskID: task, AgentURL: agentURL, State: "TASK_STATE_WORKING"}
		}
		m, err := events.Encode(events.Event{ID: fmt.Sprintf("tp-ev-%d", i), Source: "urn:bench:client", Time: now, Data: d}, events.Binary)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = m
	}

	// A raw stream configured as the lifecycle stream, under another prefix.
	life, err := r.js.Stream(ctx, r.cfg.LifecycleStream)
	if err != nil {
		b.Fatal(err)
	}
	si, err := life.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rawCfg := si.Config
	rawCfg.Name = "RAW_TASKS"
	rawCfg.Subjects = slices.Clone(rawCfg.Subjects)
	for i, s := range rawCfg.Subjects {
		rawCfg.Subjects[i] = rawPrefix(s)
	}
	if rawCfg.SubjectTransform != nil {
		st := *rawCfg.SubjectTransform
		st.Source, st.Destination = rawPrefix(st.Source), rawPrefix(st.Destination)
		rawCfg.SubjectTransform = &st
	}
	raw, err := r.js.CreateStream(ctx, rawCfg)
	if err != nil {
		b.Fatal(err)
	}
	publishAll(b, r.js, msgs, func(s string) string { return s })
	publishAll(b, r.js, msgs, rawPrefix)

	runRaw := func() {
		// One plain durable over the whole stream.
		single := r.cfg.LifecycleConsumer(0)
		single.Name, single.Durable, single.FilterSubject = "raw-single", "raw-single", ""
		singleTook = rawConsume(b, ctx, raw, []jetstream.ConsumerConfig{single})
		// One durable per partition, as the worker has.
		var cfgs []jetstream.ConsumerConfig
		for p := range max(r.cfg.Partitions, 1) {
			cc := r.cfg.LifecycleConsumer(p)
			cc.Name, cc.Durable = "raw-p"+fmt.Sprint(p), "raw-p"+fmt.Sprint(p)
			cc.FilterSubject = rawPrefix(cc.FilterSubject)
			cfgs = append(cfgs, cc)
		}
		partsTook = rawConsume(b, ctx, raw, cfgs)
	}
	if !workerFirst {
		runRaw()
	}

	// The worker, on the lifecycle stream.
	m := worker.NewMetrics(nil)
	opts := r.wt.WorkerOptions("bench", nil)
	opts.Metrics = m
	w, err := worker.New(r.js, opts)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(runCtx) }()
	waitCount(b, func() float64 { return counterSum(m.Events) }, throughputEvents)
	workerTook = time.Since(start)
	stopRun()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	w.Close()
	r.drained(b, 10*time.Second)
	if n := counterSum(m.Events); n != throughputEvents {
		b.Fatalf("worker handled %v events, want %d", n, throughputEvents)
	}

	if workerFirst {
		runRaw()
	}
	return workerTook, singleTook, partsTook
}

// rawConsume creates the durable consumers, consumes the whole stream with
// them, acking each message and nothing else, and returns how long it took
// (consumer creation included, as it is for the worker).
func rawConsume(b *testing.B, ctx context.Context, s jetstream.Stream, cfgs []jetstream.ConsumerConfig) time.Duration {
	var acked atomic.Int64
	var ccs []jetstream.ConsumeContext
	start := time.Now()
	for _, cc := range cfgs {
		cons, err := s.CreateOrUpdateConsumer(ctx, cc)
		if err != nil {
			b.Fatal(err)
		}
		c, err := cons.Consume(func(m jetstream.Msg) {
			m.Ack()
			acked.Add(1)
		})
		if err != nil {
			b.Fatal(err)
		}
		ccs = append(ccs, c)
	}
	waitCount(b, func() float64 { return float64(acked.Load()) }, throughputEvents)
	took := time.Since(start)
	for _, c := range ccs {
		c.Stop()
	}
	return took
}

func rawPrefix(s string) string { return strings.Replace(s, "a2a.task", "raw.task", 1) }

// publishAll publishes msgs asynchronously (subjects mapped by subj), at
// most 2000 in flight, and waits for every ack.
func publishAll(b *testing.B, js jetstream.JetStream, msgs []*nats.Msg, subj func(string) string) {
	for i, m := range msgs {
		pm := &nats.Msg{Subject: subj(m.Subject), Header: m.Header, Data: m.Data}
		if _, err := js.PublishMsgAsync(pm, jetstream.WithMsgID(fmt.Sprintf("%s/%d", pm.Subject, i))); err != nil {
			b.Fatal(err)
		}
		if i%2000 == 1999 {
			waitAsync(b, js)
		}
	}
	waitAsync(b, js)
}

func waitAsync(b *testing.B, js jetstream.JetStream) {
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		b.Fatal("async publishes not acknowledged within 30s")
	}
}

// waitCount polls n until it reaches want (at 1ms: the error is small next
// to the round's duration).
func waitCount(b *testing.B, n func() float64, want float64) {
	deadline := time.Now().Add(time.Minute)
	for n() < want {
		if time.Now().After(deadline) {
			b.Fatalf("only %v of %v events after a minute", n(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// counterSum adds up every series of a counter vector.
func counterSum(c *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err == nil {
			sum += d.GetCounter().GetValue()
		}
	}
	return sum
}

const (
	latencyAgents        = 40
	latencyTasksPerAgent = 50
	latencyWave          = 4 * time.Second // transitions spread over this
	latencyLease         = time.Second     // the agents' max-age
)

// newLeaseAgent starts an agent that serves its card with Cache-Control
// max-age (TakeArrivals: when each request arrived).
func newLeaseAgent(tb testing.TB, maxAge time.Duration) *servicetest.Agent {
	a := servicetest.NewAgent(tb, "")
	a.SetCacheControl(fmt.Sprintf("max-age=%d", int(maxAge.Seconds())))
	return a
}

// BenchmarkDetectionLatency: 40 agents whose cards rotate (streaming
// disabled, skills and security changed) and say max-age=1, 50 pinned
// streaming tasks each; after the rotation every task makes a streaming
// request, spread evenly over a few seconds in round-robin across the agents
// (500/s). It reports p50/p99/max from lifecycle publish to card.drift
// receipt (a core subscription on card.drift.>), and fetches per agent per
// lease: the card requests each agent received divided by the lease periods
// between its first and last request (floor(span/lease)+1, the most the
// lease allows; goal ≤ 1), plus how many requests came within a lease of the
// previous one (goal 0).
func BenchmarkDetectionLatency(b *testing.B) {
	var lat []time.Duration
	var fetches, leases, early int64
	var maxRatio float64
	var count int
	var waveTime time.Duration
	for iter := range b.N {
		b.StopTimer()
		r := newRig(b, testConfig())
		agents := make([]*servicetest.Agent, latencyAgents)
		for i := range agents {
			agents[i] = newLeaseAgent(b, latencyLease)
		}
		r.startWorker("latency", nil)
		b.StartTimer()
		l, f, ls, e, mr, took := latencyWaveRun(b, r, agents, iter)
		lat = append(lat, l...)
		fetches += f
		leases += ls
		early += e
		maxRatio = max(maxRatio, mr)
		count += len(l)
		waveTime += took
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return float64(lat[max(i, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
	b.ReportMetric(float64(fetches)/float64(leases), "fetches/agent/lease")
	b.ReportMetric(maxRatio, "worst-agent-fetches/lease")
	b.ReportMetric(float64(early), "refetches-within-lease")
	b.ReportMetric(float64(fetches)/float64(b.N*latencyAgents), "fetches/agent")
	b.ReportMetric(float64(count)/waveTime.Seconds(), "transitions/s")
	b.ReportMetric(0, "ns/op")
}

func latencyWaveRun(b *testing.B, r *rig, agents []*servicetest.Agent, iter int) (lat []time.Duration, fetches, leases, early int64, maxRatio float64, took time.Duration) {
	ctx := context.Background()
	version := fmt.Sprintf(`"version":"%d.0.0"`, iter+1)
	before := strings.ReplaceAll(writeupT0, `"version":"1.0.0"`, version)
	after := strings.ReplaceAll(writeupT40, `"version":"1.0.0"`, version)
	n := latencyAgents * latencyTasksPerAgent
	task := func(i int) (string, *servicetest.Agent) {
		return fmt.Sprintf("lat-%d-%d", iter, i), agents[i%latencyAgents]
	}

	// Pin every task on the card it was planned against (no fetch), then
	// rotate every agent.
	for _, a := range agents {
		a.Set(before)
	}
	for i := range n {
		id, a := task(i)
		must(b, r.emit.Submitted(ctx, events.Submitted{TaskID: id, AgentURL: a.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true, Security: []string{"bearer"}}, Posture: detector.FailClosed,
			Card: []byte(strings.ReplaceAll(before, "AGENT", a.URL()))}))
	}
	r.drained(b, time.Minute)
	for _, a := range agents {
		a.Set(after)
		a.TakeArrivals()
	}

	var mu sync.Mutex
	published := make(map[string]time.Time, n)
	received := make(map[string]time.Time, n)
	sub, err := r.nc.Subscribe("card.drift.>", func(m *nats.Msg) {
		at := time.Now()
		ev, err := events.Decode(events.NATSMsg(m))
		if err != nil {
			return
		}
		mu.Lock()
		if _, ok := received[ev.TaskID()]; !ok {
			received[ev.TaskID()] = at
		}
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()

	every := latencyWave / time.Duration(n)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
		id, a := task(i)
		at := time.Now()
		mu.Lock()
		published[id] = at
		mu.Unlock()
		must(b, r.emit.Request(ctx, events.Request{TaskID: id, AgentURL: a.URL(), Method: "tasks/sendSubscribe", Attempt: 1}))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		got := len(received)
		mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d card.drift after a minute", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took = time.Since(start)

	mu.Lock()
	for id, at := range received {
		lat = append(lat, at.Sub(published[id]))
	}
	mu.Unlock()
	for _, a := range agents {
		at := a.TakeArrivals()
		if len(at) == 0 {
			b.Fatalf("agent %s was never fetched", a.URL())
		}
		for i := 1; i < len(at); i++ {
			// A lease starts when the response completes, after the request
			// arrived: the next request may not arrive within one lease.
			if at[i].Sub(at[i-1]) < latencyLease-5*time.Millisecond {
				early++
			}
		}
		f := int64(len(at))
		l := int64(at[len(at)-1].Sub(at[0])/latencyLease) + 1
		fetches += f
		leases += l
		maxRatio = max(maxRatio, float64(f)/float64(l))
	}
	return lat, fetches, leases, early, maxRatio, took
}

// TestBenchAsDeployed: the arrangement an operator deploys, every part its
// own process — a standalone nats-server, `carddrift serve --nats-url`, and
// `carddrift bench --nats-url`, whose raw consumer is a process of its own
// too. bench reads serve's CPU from its /metrics and the server's from
// /proc (a real other process), and its JSON says where the raw consumer
// ran and that the server is not serve's.
func TestBenchAsDeployed(t *testing.T) {
	bin := buildCarddrift(t)
	nsBin := natsServerBinary(t)
	port, mport := freePort(t), freePort(t)
	logs := &syncBuffer{}
	ns := exec.Command(nsBin, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-m", fmt.Sprint(mport))
	ns.Stdout, ns.Stderr = logs, logs
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	nsExited := make(chan struct{})
	go func() { ns.Wait(); close(nsExited) }()
	t.Cleanup(func() {
		ns.Process.Kill()
		<-nsExited
		if t.Failed() {
			t.Logf("nats-server output:\n%s", logs.String())
		}
	})
	natstest.Eventually(t, 20*time.Second, "nats-server healthy", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz?js-enabled-only=true", mport))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	sp := startServe(t, bin, natsURL, "bench-deployed")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "--nats-url", natsURL, "--throughput-only", "--events", "1000", "--rounds", "2", "--json",
		"--metrics-url", "http://"+sp.httpAddr+"/metrics", "--nats-server-pid", fmt.Sprint(ns.Process.Pid))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CARDDRIFT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("carddrift bench: %v\n%s", err, stderr.String())
	}
	type perK = *float64
	var rep struct {
		Throughput struct {
			Rounds []struct {
				RawPerSecond, CarddriftPerSecond float64
				Serve                            perK `json:"serveCpuMsPer1000Events"`
				Raw                              perK `json:"rawCpuMsPer1000Events"`
				ServerCarddrift                  perK `json:"serverCpuMsPer1000EventsCarddrift"`
				ServerRaw                        perK `json:"serverCpuMsPer1000EventsRaw"`
			} `json:"rounds"`
			Ratio          float64 `json:"ratio"`
			RawConsumer    string  `json:"rawConsumer"`
			EmbeddedServer bool    `json:"embeddedServer"`
			CPU            struct {
				Serve        perK              `json:"serveCpuMsPer1000Events"`
				ServerSource string            `json:"serverSource"`
				NotRead      map[string]string `json:"notRead"`
			} `json:"cpu"`
		} `json:"throughput"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	tp := rep.Throughput
	if tp.RawConsumer != "own-process" || tp.EmbeddedServer || tp.Ratio <= 0 || len(tp.Rounds) != 2 {
		t.Fatalf("throughput %+v: want the raw consumer in its own process, a standalone server, a ratio, 2 rounds", tp)
	}
	for i, r := range tp.Rounds {
		if r.Serve == nil || r.Raw == nil || *r.Raw <= 0 || r.ServerCarddrift == nil || *r.ServerCarddrift <= 0 || r.ServerRaw == nil || *r.ServerRaw <= 0 {
			t.Errorf("round %d: CPU per 1,000 events serve %v, raw %v, server %v / %v: want every one read, the processes' above zero",
				i, r.Serve, r.Raw, r.ServerCarddrift, r.ServerRaw)
		}
	}
	if want := fmt.Sprintf("/proc/%d/stat", ns.Process.Pid); tp.CPU.ServerSource != want || len(tp.CPU.NotRead) != 0 {
		t.Errorf("cpu: server source %q, not read %v; want %q, nothing missing", tp.CPU.ServerSource, tp.CPU.NotRead, want)
	}

	// The detection phase and its baseline, as deployed: the same traffic
	// into the raw consumer process; the server's CPU read for both sides.
	cmd = exec.CommandContext(ctx, bin, "bench", "--nats-url", natsURL, "--detection-only", "--agents", "4", "--duration", "6s",
		"--settle", "1s", "--json", "--metrics-url", "http://"+sp.httpAddr+"/metrics", "--nats-server-pid", fmt.Sprint(ns.Process.Pid))
	cmd.Env = env
	stderr.Reset()
	cmd.Stderr = &stderr
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("carddrift bench --detection-only: %v\n%s", err, stderr.String())
	}
	var det struct {
		Throughput *json.RawMessage `json:"throughput"`
		Detection  struct {
			LifecycleEvents int64 `json:"lifecycleEvents"`
			Cost            struct {
				Serve  perK `json:"serveCpuMsPer1000Events"`
				Server perK `json:"serverCpuMsPer1000Events"`
			} `json:"cost"`
			Baseline struct {
				Events int64   `json:"events"`
				Raw    float64 `json:"rawCpuMsPer1000Events"`
				Cost   struct {
					Embedded bool `json:"embeddedServer"`
					Server   perK `json:"serverCpuMsPer1000Events"`
				} `json:"cost"`
				Total     perK `json:"totalCpuMsPer1000Events"`
				Carddrift perK `json:"carddriftTotalCpuMsPer1000Events"`
				Ratio     perK `json:"ratio"`
			} `json:"baseline"`
		} `json:"detection"`
	}
	if err := json.Unmarshal(out, &det); err != nil {
		t.Fatalf("bench --detection-only --json: %v\n%s", err, out)
	}
	d, b := det.Detection, det.Detection.Baseline
	if det.Throughput != nil || d.LifecycleEvents == 0 || d.Cost.Serve == nil || d.Cost.Server == nil {
		t.Fatalf("bench --detection-only: %s: want no throughput phase, the detection phase's events and cost", out)
	}
	if b.Events == 0 || b.Raw <= 0 || b.Cost.Embedded || b.Cost.Server == nil || *b.Cost.Server <= 0 || b.Ratio == nil ||
		*b.Total != b.Raw+*b.Cost.Server || *b.Carddrift != *d.Cost.Serve+*d.Cost.Server {
		t.Errorf("baseline %s: want its events, the raw consumer's and the standalone server's CPU, the totals counted alike, a ratio", out)
	}
}
