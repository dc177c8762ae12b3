package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/store"
)

// benchFlags are the flags of carddrift bench.
type benchFlags struct {
	demo       demoFlags
	nats       natsFlags
	events     int
	rounds     int
	driftShare float64
	skipFleet  bool
	deployment deploymentFlags
}

// register adds bench's flags.
func (f *benchFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	fs.IntVar(&f.events, "events", 50000, "no-fetch lifecycle events per throughput round")
	fs.IntVar(&f.rounds, "rounds", 2, "throughput rounds (raw and carddrift alternate who goes first)")
	fs.IntVar(&f.demo.agents, "agents", 40, "agents the detection phase starts on loopback")
	fs.DurationVar(&f.demo.duration, "duration", 30*time.Second, "how long the detection phase sends traffic")
	fs.DurationVar(&f.demo.taskEvery, "task-every", time.Second, "each agent gets a new task this often (the rate: agents/task-every tasks per second)")
	fs.Float64Var(&f.driftShare, "drift-share", 0.75, "share of the agents whose cards drift during the detection phase (the rest are the control group)")
	fs.Int64Var(&f.demo.seed, "seed", 1, "seed of the fleet, the schedule and the traffic")
	fs.BoolVar(&f.skipFleet, "throughput-only", false, "skip the detection phase")
	fs.BoolVar(&f.demo.json, "json", false, "print one JSON object")
	f.deployment.register(fs, "the deployment's --default-lease")
}

// run checks the flags, connects and runs the benchmark.
func (f *benchFlags) run(ctx context.Context, e *env) error {
	if f.events < 100 || f.rounds < 1 {
		return usagef("--events must be at least 100 and --rounds at least 1")
	}
	if f.driftShare < 0 || f.driftShare > 1 {
		return usagef("--drift-share must be between 0 and 1")
	}
	nc, js, err := f.nats.jetStream("carddrift-bench")
	if err != nil {
		return err
	}
	defer nc.Close()
	return runBench(ctx, e, js, store.DefaultConfig(), f)
}

// BenchReport is carddrift bench's result (its --json document).
type BenchReport struct {
	Throughput BenchThroughput `json:"throughput"`
	Detection  *BenchDetection `json:"detection,omitempty"`
}

// BenchThroughput compares carddrift's drain rate of no-fetch events with
// raw JetStream consume+ack of the same events on the same server.
type BenchThroughput struct {
	Events int `json:"events"`
	// Rounds are the per-round rates, in events per second.
	Rounds []BenchRound `json:"rounds"`
	// RawPerSecond and CarddriftPerSecond are the medians of the rounds;
	// Ratio is CarddriftPerSecond / RawPerSecond.
	RawPerSecond       float64 `json:"rawPerSecond"`
	CarddriftPerSecond float64 `json:"carddriftPerSecond"`
	Ratio              float64 `json:"ratio"`
}

// BenchRound is one side-by-side measurement.
type BenchRound struct {
	RawFirst           bool    `json:"rawFirst"`
	RawPerSecond       float64 `json:"rawPerSecond"`
	CarddriftPerSecond float64 `json:"carddriftPerSecond"`
}

// BenchDetection is the detection phase's figures.
type BenchDetection struct {
	Agents                  int            `json:"agents"`
	DriftingAgents          int            `json:"driftingAgents"`
	Tasks                   int            `json:"tasks"`
	LifecycleEvents         int64          `json:"lifecycleEvents"`
	EventsPerSecond         float64        `json:"eventsPerSecond"`
	LatencyMs               fleet.Latency  `json:"latencyMs"`
	FetchesPerAgentPerLease float64        `json:"fetchesPerAgentPerLease"`
	MaxFetchesPerLease      float64        `json:"maxFetchesPerAgentPerLease"`
	Verdicts                map[string]int `json:"verdicts"`
	Injected                int            `json:"injected"`
	Detected                int            `json:"detected"`
	Late                    int            `json:"late"`
	Missed                  int            `json:"missed"`
	FalseAborts             int            `json:"falseAborts"`
}

func runBench(ctx context.Context, e *env, js jetstream.JetStream, cfg store.Config, f *benchFlags) error {
	say := func(format string, args ...any) {
		if !f.demo.json {
			fmt.Fprintf(e.stdout, format, args...)
		}
	}
	lc, err := js.Stream(ctx, cfg.LifecycleStream)
	if err != nil {
		return fmt.Errorf("lifecycle stream %s: %w (is `carddrift serve` running against this server?)", cfg.LifecycleStream, err)
	}
	info, err := lc.Info(ctx)
	if err != nil {
		return err
	}
	var rep BenchReport
	rep.Throughput.Events = f.events
	say("throughput: %d no-fetch events per round, %d round(s), raw consume+ack vs carddrift, same server\n", f.events, f.rounds)
	for round := range f.rounds {
		rawFirst := round%2 == 1
		var r BenchRound
		r.RawFirst = rawFirst
		for _, raw := range []bool{rawFirst, !rawFirst} {
			var took time.Duration
			if raw {
				took, err = benchRaw(ctx, js, info.Config.Storage, f.events)
			} else {
				took, err = benchCarddrift(ctx, js, cfg, f.events)
			}
			if err != nil {
				return err
			}
			rate := float64(f.events) / took.Seconds()
			if raw {
				r.RawPerSecond = rate
			} else {
				r.CarddriftPerSecond = rate
			}
		}
		say("  round %d: raw %8.0f events/s, carddrift %8.0f events/s, ratio %.2f\n", round+1, r.RawPerSecond, r.CarddriftPerSecond, r.CarddriftPerSecond/r.RawPerSecond)
		rep.Throughput.Rounds = append(rep.Throughput.Rounds, r)
	}
	rep.Throughput.RawPerSecond = median(rep.Throughput.Rounds, func(r BenchRound) float64 { return r.RawPerSecond })
	rep.Throughput.CarddriftPerSecond = median(rep.Throughput.Rounds, func(r BenchRound) float64 { return r.CarddriftPerSecond })
	rep.Throughput.Ratio = rep.Throughput.CarddriftPerSecond / rep.Throughput.RawPerSecond
	say("  median: raw %.0f events/s, carddrift %.0f events/s, ratio %.2f\n", rep.Throughput.RawPerSecond, rep.Throughput.CarddriftPerSecond, rep.Throughput.Ratio)

	if !f.skipFleet {
		f.demo.quiet = true
		say("\ndetection: %d agents on loopback, %.0f%% drifting, %s of traffic\n", f.demo.agents, 100*f.driftShare, f.demo.duration)
		jsonOut := f.demo.json
		f.demo.json = true // driveFleet's own progress lines stay quiet
		f.demo.driftShare = f.driftShare
		card, err := driveFleet(ctx, e, js, cfg, &f.demo, nil,
			f.deployment.lease(), f.deployment.fullFetch, "bench", f.deployment.settled(ctx))
		f.demo.json = jsonOut
		if err != nil {
			return err
		}
		drifting := 0
		for name, s := range card.Scenarios {
			if name != fleet.Control {
				drifting += s.Agents
			}
		}
		rep.Detection = &BenchDetection{
			Agents: card.Agents, DriftingAgents: drifting, Tasks: card.Tasks, LifecycleEvents: card.Events,
			EventsPerSecond: card.EventsPerSecond, LatencyMs: card.LatencyMs,
			FetchesPerAgentPerLease: card.FetchesPerAgentPerLease, MaxFetchesPerLease: card.MaxFetchesPerLease,
			Verdicts: card.Verdicts, Injected: card.Injected, Detected: card.Detected, Late: card.Late,
			Missed: card.Missed, FalseAborts: card.FalseAborts,
		}
		d := rep.Detection
		say("  %d tasks, %d lifecycle events (%.0f/s)\n", d.Tasks, d.LifecycleEvents, d.EventsPerSecond)
		say("  detection latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", d.LatencyMs.P50, d.LatencyMs.P99, d.LatencyMs.Max)
		say("  fetches per agent per lease: mean %.2f, max %.2f\n", d.FetchesPerAgentPerLease, d.MaxFetchesPerLease)
		say("  verdicts: abort %d, replan %d, continue %d; injected %d, detected %d (late %d), missed %d, false aborts %d\n",
			d.Verdicts["abort"], d.Verdicts["replan"], d.Verdicts["continue"], d.Injected, d.Detected, d.Late, d.Missed, d.FalseAborts)
	}
	if f.demo.json {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	return nil
}

func median(rs []BenchRound, v func(BenchRound) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = v(r)
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 1 {
		return xs[n/2]
	} else {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
}

// benchMessages returns n no-fetch lifecycle events (status working and
// first attempts of tasks/get, binary mode, as the Emitter sends them) on
// subjects under prefix ("" keeps the lifecycle subjects).
func benchMessages(n int, run string) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, n)
	now := time.Now()
	for i := range msgs {
		taskID := fmt.Sprintf("bench-%s-%d", run, i%1024)
		var d events.Data = events.Status{TaskID: taskID, AgentURL: "http://127.0.0.1:9", State: "working"}
		if i%2 == 1 {
			d = events.Request{TaskID: taskID, AgentURL: "http://127.0.0.1:9", Method: "tasks/get", Attempt: 1}
		}
		m, err := events.Encode(events.Event{ID: fmt.Sprintf("bench-%s-ev-%d", run, i), Source: "urn:carddrift:bench", Time: now, Data: d}, events.Binary)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

// publishAll publishes msgs asynchronously, in windows of at most 2000
// unacknowledged messages, and waits for every ack.
func publishAll(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg) error {
	const window = 2000
	for i := 0; i < len(msgs); i += window {
		for _, m := range msgs[i:min(i+window, len(msgs))] {
			if _, err := js.PublishMsgAsync(m); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Minute):
			return errors.New("publish: acks did not come within 2m")
		}
	}
	return nil
}

// benchRaw measures one durable pull consumer consuming and acknowledging n
// events on a scratch stream (the lifecycle stream's storage), published as
// carddrift's are: from the first publish to the last ack.
func benchRaw(ctx context.Context, js jetstream.JetStream, storage jetstream.StorageType, n int) (time.Duration, error) {
	run := fmt.Sprint(time.Now().UnixNano())
	name := "CARDDRIFT_BENCH_" + run
	subject := "carddrift.bench." + run
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject + ".>"}, Storage: storage})
	if err != nil {
		return 0, fmt.Errorf("scratch stream: %w", err)
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), name)
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1000})
	if err != nil {
		return 0, err
	}
	msgs, err := benchMessages(n, run)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		m.Subject = subject + m.Subject[len("a2a.task"):]
	}
	var acked atomic.Int64
	done := make(chan struct{})
	start := time.Now()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		m.Ack()
		if acked.Add(1) == int64(n) {
			close(done)
		}
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		return 0, err
	}
	defer cc.Stop()
	if err := publishAll(ctx, js, msgs); err != nil {
		return 0, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(5 * time.Minute):
		return 0, errors.New("raw consumer did not finish within 5m")
	}
	// The last acks are on their way; the consumer's ack floor confirms them.
	if err := waitDrained(ctx, js, name, []string{"raw"}, time.Millisecond, time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// streamConsumers lists the durable consumers of a stream: the deployment's
// workers' (their number depends on its partitions, which bench does not
// know).
func streamConsumers(ctx context.Context, js jetstream.JetStream, stream string) ([]string, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	var out []string
	names := st.ConsumerNames(ctx)
	for n := range names.Name() {
		out = append(out, n)
	}
	if err := names.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("stream %s has no consumers: is `carddrift serve` running?", stream)
	}
	return out, nil
}

// benchCarddrift measures the deployment's workers draining n no-fetch
// events from the lifecycle stream: from the first publish until every
// lifecycle consumer has acknowledged everything.
func benchCarddrift(ctx context.Context, js jetstream.JetStream, cfg store.Config, n int) (time.Duration, error) {
	msgs, err := benchMessages(n, fmt.Sprint(time.Now().UnixNano()))
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := publishAll(ctx, js, msgs); err != nil {
		return 0, err
	}
	durables, err := streamConsumers(ctx, js, cfg.LifecycleStream)
	if err != nil {
		return 0, err
	}
	if err := waitDrained(ctx, js, cfg.LifecycleStream, durables, 10*time.Millisecond, 5*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
