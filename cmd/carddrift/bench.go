package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

type benchFlags struct {
	demo       demoFlags
	nats       natsFlags
	events     int
	rounds     int
	json       bool
	skipFleet  bool
	deployment deploymentFlags
	cost       costFlags
	// skipThroughput is --detection-only; mixBaseline is --mix-baseline.
	skipThroughput, mixBaseline bool
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	fs.IntVar(&f.events, "events", 50000, "no-fetch lifecycle events per throughput round")
	fs.IntVar(&f.rounds, "rounds", 2, "throughput rounds (raw and carddrift alternate who goes first)")
	fs.IntVar(&f.demo.agents, "agents", 40, "agents the detection phase starts on loopback")
	fs.DurationVar(&f.demo.duration, "duration", 30*time.Second, "how long the detection phase sends traffic")
	fs.DurationVar(&f.demo.taskEvery, "task-every", time.Second, "each agent gets a new task this often (the rate: agents/task-every tasks per second)")
	fs.Float64Var(&f.demo.driftShare, "drift-share", 0.75, "share of the agents whose cards drift during the detection phase (the rest are the control group)")
	fs.Int64Var(&f.demo.seed, "seed", 1, "seed of the fleet, the schedule and the traffic")
	fs.BoolVar(&f.skipFleet, "throughput-only", false, "skip the detection phase")
	fs.BoolVar(&f.skipThroughput, "detection-only", false, "skip the throughput phase")
	fs.BoolVar(&f.mixBaseline, "mix-baseline", true, "after the detection phase, play its traffic again into a raw consumer (a process of its own) "+
		"on a scratch stream: the cost figure's baseline in the same arrangement (false: skip)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object")
	f.deployment.register(fs, "the deployment's --default-lease")
	f.cost.register(fs)
}

// BenchReport is carddrift bench's result (its --json document).
type BenchReport struct {
	Throughput *BenchThroughput `json:"throughput,omitempty"` // absent with --detection-only
	Detection  *BenchDetection  `json:"detection,omitempty"`
}

// BenchThroughput compares carddrift's drain rate of no-fetch events with
// raw consume+ack of the same events on the same server: events per
// second, medians of the rounds'.
type BenchThroughput struct {
	Events             int          `json:"events"`
	Rounds             []BenchRound `json:"rounds"`
	RawPerSecond       float64      `json:"rawPerSecond"`
	CarddriftPerSecond float64      `json:"carddriftPerSecond"`
	Ratio              float64      `json:"ratio"`
	RawConsumer        string       `json:"rawConsumer"` // rawOwnProcess
	EmbeddedServer     bool         `json:"embeddedServer"`
	CPU                BenchCPU     `json:"cpu"`
}

// rawOwnProcess: the raw consumer ran as a process of its own.
const rawOwnProcess = "own-process"

// BenchRound is one side-by-side measurement.
type BenchRound struct {
	RawFirst           bool    `json:"rawFirst"`
	RawPerSecond       float64 `json:"rawPerSecond"`
	CarddriftPerSecond float64 `json:"carddriftPerSecond"`
	BenchSidesCPU
}

// BenchSidesCPU is the CPU per 1,000 events of each side, absent where it
// was not read.
type BenchSidesCPU struct {
	ServeCPUMsPer1000           *float64 `json:"serveCpuMsPer1000Events,omitempty"`
	RawCPUMsPer1000             *float64 `json:"rawCpuMsPer1000Events,omitempty"`
	ServerCPUMsPer1000Carddrift *float64 `json:"serverCpuMsPer1000EventsCarddrift,omitempty"`
	ServerCPUMsPer1000Raw       *float64 `json:"serverCpuMsPer1000EventsRaw,omitempty"`
}

// BenchCPU is the throughput phase's CPU, medians of the rounds.
type BenchCPU struct {
	BenchSidesCPU
	ServeSource  string            `json:"serveSource,omitempty"`
	ServerSource string            `json:"serverSource,omitempty"`
	NotRead      map[string]string `json:"notRead,omitempty"`
	LoadBefore   *[3]float64       `json:"loadBefore,omitempty"`
	LoadAfter    *[3]float64       `json:"loadAfter,omitempty"`
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
	// Cost is the fleet's mix's; the others are absent with --mix-baseline=false.
	Cost      *Cost        `json:"cost,omitempty"`
	Baseline  *MixBaseline `json:"baseline,omitempty"`
	Efficient *Efficient   `json:"efficient,omitempty"`
	Ratios    *Ratios      `json:"ratios,omitempty"`
}

func (f *benchFlags) run(ctx context.Context, e *env) error {
	if f.events < 100 || f.rounds < 1 {
		return usagef("--events must be at least 100 and --rounds at least 1")
	}
	if f.demo.driftShare < 0 || f.demo.driftShare > 1 {
		return usagef("--drift-share must be between 0 and 1")
	}
	if f.skipFleet && f.skipThroughput {
		return usagef("--throughput-only and --detection-only are exclusive")
	}
	nc, js, err := f.nats.jetStream("carddrift-bench")
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg := store.DefaultConfig()
	out := e.stdout // the text lines; with --json, one object at the end
	if f.json {
		out = io.Discard
	}
	say := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	lc, err := js.Stream(ctx, cfg.LifecycleStream)
	if err != nil {
		return fmt.Errorf("lifecycle stream %s: %w (is `carddrift serve` running against this server?)", cfg.LifecycleStream, err)
	}
	info, err := lc.Info(ctx)
	if err != nil {
		return err
	}
	embedded := embeddedServer(nc)
	var rep BenchReport
	if !f.skipThroughput {
		if rep.Throughput, err = benchThroughput(ctx, out, js, cfg, f, info, embedded); err != nil {
			return err
		}
	}
	if !f.skipFleet {
		say("\ndetection: %d agents on loopback, %.0f%% drifting, %s of traffic\n", f.demo.agents, 100*f.demo.driftShare, f.demo.duration)
		quiet := f.demo
		quiet.json = true // driveFleet's own lines stay quiet
		first, err := lastSeq(ctx, lc)
		if err != nil {
			return err
		}
		before := f.cost.read(ctx)
		card, err := driveFleet(ctx, e, js, cfg, &quiet, nil,
			f.deployment.lease(), f.deployment.fullFetch, "bench", f.deployment.settled(ctx))
		if err != nil {
			return err
		}
		last, err := lastSeq(ctx, lc)
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
			Cost: f.cost.afterDrained(ctx, js, cfg.LifecycleStream, before, card.Events, embedded),
		}
		d := rep.Detection
		say("  %d tasks, %d lifecycle events (%.0f/s)\n", d.Tasks, d.LifecycleEvents, d.EventsPerSecond)
		say("  detection latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", d.LatencyMs.P50, d.LatencyMs.P99, d.LatencyMs.Max)
		say("  fetches per agent per lease: mean %.2f, max %.2f\n", d.FetchesPerAgentPerLease, d.MaxFetchesPerLease)
		say("  verdicts: abort %d, replan %d, continue %d; injected %d, detected %d (late %d), missed %d, false aborts %d\n",
			d.Verdicts["abort"], d.Verdicts["replan"], d.Verdicts["continue"], d.Injected, d.Detected, d.Late, d.Missed, d.FalseAborts)
		d.Cost.write(out, "lifecycle events of the fleet's mix")
		if f.mixBaseline {
			say("\n")
			if d.Baseline, err = benchMixBaseline(ctx, js, f, info.Config, embedded); err != nil {
				return fmt.Errorf("bench: baseline: %w", err)
			}
			d.Baseline.CarddriftTotalMsPer1000 = sideTotal(d.Cost)
			d.Baseline.Ratio = ratio(d.Baseline.CarddriftTotalMsPer1000, d.Baseline.TotalMsPer1000)
			d.Baseline.write(out)
			say("\n")
			if d.Efficient, err = benchEfficient(ctx, nc, f, info.Config, first+1, last, embedded); err != nil {
				return fmt.Errorf("bench: efficient publisher: %w", err)
			}
			d.Ratios = ratios(d.Cost, d.Baseline, d.Efficient)
			d.Efficient.write(out, d.Ratios)
		}
	}
	if f.json {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	return nil
}

func lastSeq(ctx context.Context, s jetstream.Stream) (uint64, error) {
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// benchThroughput runs f.rounds rounds of f.events no-fetch events,
// drained by the raw consumer and by carddrift in turn.
func benchThroughput(ctx context.Context, out io.Writer, js jetstream.JetStream, cfg store.Config, f *benchFlags, info *jetstream.StreamInfo,
	embedded bool) (*BenchThroughput, error) {
	say := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	t := &BenchThroughput{Events: f.events, EmbeddedServer: embedded, RawConsumer: rawOwnProcess}
	say("throughput: %d no-fetch events per round, %d round(s), raw consume+ack vs carddrift, same server\n", f.events, f.rounds)
	if !embedded {
		say("  the raw durable consumer runs as a process of its own, as serve's workers do (both cross a process boundary to the server)\n")
	} else {
		say("  the raw durable consumer runs as a process of its own; the server is serve's embedded one (%s):\n"+
			"  serve's workers reach it inside serve's process, the raw consumer crosses a process boundary,\n"+
			"  so the ratio flatters carddrift; as deployed, measure `carddrift serve --nats-url` against a standalone nats-server\n", service.EmbeddedServerName)
	}
	pins, err := benchPins(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	// Untimed: one event per pinned task, so that no round pays for the
	// first reads of the pins.
	if _, _, err := benchCarddrift(ctx, js, f, cfg, pins, len(pins), embedded); err != nil {
		return nil, fmt.Errorf("bench: warm-up: %w", err)
	}
	before := f.cost.read(ctx)
	for round := range f.rounds {
		// Alternate who goes first: neither always gets the warmest server.
		r := BenchRound{RawFirst: round%2 == 1}
		for _, raw := range []bool{r.RawFirst, !r.RawFirst} {
			if !raw {
				rate, c, err := benchCarddrift(ctx, js, f, cfg, pins, f.events, embedded)
				if err != nil {
					return nil, err
				}
				r.CarddriftPerSecond, r.ServeCPUMsPer1000, r.ServerCPUMsPer1000Carddrift = rate, c.ServeCPUMsPer1000, c.ServerCPUMsPer1000
				continue
			}
			side, err := f.runRaw(ctx, js, jetstream.StreamConfig{Storage: info.Config.Storage}, embedded, func(ctx context.Context, s scratch) error {
				msgs, err := benchMessages(f.events, s.run, pins)
				if err != nil {
					return err
				}
				return publishAll(ctx, scratchPublisher{Publisher: js, subject: s.subject}, msgs)
			})
			if err != nil {
				return nil, err
			}
			raw := side.figure().RawCPUMsPer1000
			r.RawPerSecond, r.RawCPUMsPer1000, r.ServerCPUMsPer1000Raw = float64(side.events)/side.took.Seconds(), &raw, side.cost.ServerCPUMsPer1000
		}
		say("  round %d: raw %8.0f events/s, carddrift %8.0f events/s, ratio %.2f\n", round+1, r.RawPerSecond, r.CarddriftPerSecond, r.CarddriftPerSecond/r.RawPerSecond)
		t.Rounds = append(t.Rounds, r)
	}
	after := f.cost.read(ctx)
	t.RawPerSecond = *median(t.Rounds, func(r BenchRound) *float64 { return &r.RawPerSecond })
	t.CarddriftPerSecond = *median(t.Rounds, func(r BenchRound) *float64 { return &r.CarddriftPerSecond })
	t.Ratio = t.CarddriftPerSecond / t.RawPerSecond
	say("  median: raw %.0f events/s, carddrift %.0f events/s, ratio %.2f\n", t.RawPerSecond, t.CarddriftPerSecond, t.Ratio)
	t.CPU = throughputCPU(t.Rounds, &f.cost, before, after, embedded)
	t.CPU.write(out, embedded)
	return t, nil
}

// median is the median of v over the rounds where it is not nil.
func median(rs []BenchRound, v func(BenchRound) *float64) *float64 {
	var xs []float64
	for _, r := range rs {
		if p := v(r); p != nil {
			xs = append(xs, *p)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + m) / 2
	}
	return &m
}

// benchMessages returns n no-fetch events: status working (v0.3 and v1
// spellings) of the pinned tasks, binary mode, as the Emitter sends them.
func benchMessages(n int, run string, tasks []string) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, n)
	now := time.Now()
	for i := range msgs {
		state := "working"
		if i%2 == 1 {
			state = "TASK_STATE_WORKING"
		}
		d := events.Status{TaskID: tasks[i%len(tasks)], AgentURL: benchAgent, State: state}
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
func publishAll(ctx context.Context, js jetstream.Publisher, msgs []*nats.Msg) error {
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

// streamConsumers lists the durable consumers of a stream: the workers'
// (bench does not know the deployment's partitions).
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

const benchTasks = 1024 // the throughput events are spread over these

// benchCard is the card the bench tasks are pinned on; benchAgent is never fetched.
const (
	benchAgent = "http://127.0.0.1:9"
	benchCard  = `{"name":"bench","version":"1.0.0","protocolVersion":"1.0.0","url":"` + benchAgent + `","capabilities":{"streaming":true},` +
		`"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
)

// benchPins pins benchTasks tasks straight into the deployment's pin store,
// so that the throughput events need no fetch.
func benchPins(ctx context.Context, js jetstream.JetStream, cfg store.Config) ([]string, error) {
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	st, err := store.Bind[task.Pin](bctx, js, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: open the stores: %w (is `carddrift serve` running against this server?)", err)
	}
	body := []byte(benchCard)
	card, err := detector.Parse(body)
	if err != nil {
		return nil, err
	}
	digest, err := detector.Digest(body)
	if err != nil {
		return nil, err
	}
	if err := st.Cards.Put(bctx, digest, body); err != nil {
		return nil, fmt.Errorf("bench: store the pinned card: %w", err)
	}
	run := fmt.Sprint(time.Now().UnixNano())
	now := time.Now().UTC()
	var tasks []string
	for i := range benchTasks {
		id := fmt.Sprintf("bench-%s-%d", run, i)
		if _, err := st.Pins.Create(bctx, task.Pin{
			TaskID: id, AgentURL: benchAgent, Digest: digest, Fingerprint: detector.Fingerprint(card),
			CardVersion: card.Version, PinnedAt: now, Source: events.PinClientCard,
			Requirements: detector.Requirements{SkillID: "summarize", Posture: detector.FailClosed},
		}); err != nil {
			return nil, fmt.Errorf("bench: pin %s: %w", id, err)
		}
		tasks = append(tasks, id)
	}
	return tasks, nil
}

// benchCarddrift measures the workers draining n no-fetch events, until
// every lifecycle consumer has acknowledged everything, and the cost.
func benchCarddrift(ctx context.Context, js jetstream.JetStream, f *benchFlags, cfg store.Config, tasks []string, n int, embedded bool) (float64, *Cost, error) {
	msgs, err := benchMessages(n, fmt.Sprint(time.Now().UnixNano()), tasks)
	if err != nil {
		return 0, nil, err
	}
	durables, err := streamConsumers(ctx, js, cfg.LifecycleStream)
	if err != nil {
		return 0, nil, err
	}
	a := f.cost.read(ctx)
	start := time.Now()
	if err := publishAll(ctx, js, msgs); err != nil {
		return 0, nil, err
	}
	if err := waitDrained(ctx, js, cfg.LifecycleStream, durables, 10*time.Millisecond, 5*time.Minute); err != nil {
		return 0, nil, err
	}
	return float64(n) / time.Since(start).Seconds(), f.cost.cost(a, f.cost.read(ctx), int64(n), embedded), nil
}

// throughputCPU is the medians of the rounds' CPU figures.
func throughputCPU(rs []BenchRound, cf *costFlags, before, after cpuReading, embedded bool) BenchCPU {
	med := func(v func(BenchRound) *float64) *float64 { return median(rs, v) }
	cost := cf.cost(before, after, 1, embedded) // the sources and reasons, the same for every round
	return BenchCPU{BenchSidesCPU: BenchSidesCPU{
		ServeCPUMsPer1000:           med(func(r BenchRound) *float64 { return r.ServeCPUMsPer1000 }),
		RawCPUMsPer1000:             med(func(r BenchRound) *float64 { return r.RawCPUMsPer1000 }),
		ServerCPUMsPer1000Carddrift: med(func(r BenchRound) *float64 { return r.ServerCPUMsPer1000Carddrift }),
		ServerCPUMsPer1000Raw:       med(func(r BenchRound) *float64 { return r.ServerCPUMsPer1000Raw }),
	}, ServeSource: cost.ServeSource, ServerSource: cost.ServerSource, NotRead: cost.NotRead, LoadBefore: cost.LoadBefore, LoadAfter: cost.LoadAfter}
}

func (c *BenchCPU) write(w io.Writer, embedded bool) {
	serve := "not read"
	if r := c.NotRead["serve"]; r != "" {
		serve += " (" + r + ")"
	}
	if c.ServeCPUMsPer1000 != nil {
		serve = fmt.Sprintf("%.0f ms", *c.ServeCPUMsPer1000)
		if embedded {
			serve += " (its embedded NATS server's included)"
		}
	}
	raw := "not read"
	if c.RawCPUMsPer1000 != nil {
		raw = fmt.Sprintf("%.0f ms", *c.RawCPUMsPer1000)
	}
	fmt.Fprintf(w, "  CPU per 1,000 events (medians): serve %s, raw consumer process %s\n", serve, raw)
	switch {
	case c.ServerCPUMsPer1000Carddrift != nil && c.ServerCPUMsPer1000Raw != nil:
		fmt.Fprintf(w, "  NATS server's CPU per 1,000 events (%s): %.0f ms while carddrift drained, %.0f ms while the raw consumer did\n",
			c.ServerSource, *c.ServerCPUMsPer1000Carddrift, *c.ServerCPUMsPer1000Raw)
	case c.NotRead["server"] != "":
		fmt.Fprintf(w, "  NATS server's CPU: not read (%s)\n", c.NotRead["server"])
	}
	writeLoad(w, c.LoadBefore, c.LoadAfter)
}
