package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
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
			fig, took, err := f.runRaw(ctx, js, jetstream.StreamConfig{Storage: info.Config.Storage}, embedded, func(ctx context.Context, s scratch) error {
				msgs, err := benchMessages(f.events, s.run, pins)
				if err != nil {
					return err
				}
				return publishAll(ctx, scratchPublisher{Publisher: js, subject: s.subject}, msgs)
			})
			if err != nil {
				return nil, err
			}
			r.RawPerSecond, r.RawCPUMsPer1000, r.ServerCPUMsPer1000Raw = float64(fig.Events)/took.Seconds(), &fig.RawCPUMsPer1000, fig.Cost.ServerCPUMsPer1000
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

// MixBaseline is what the detection phase's traffic costs with no carddrift:
// the same traffic onto a scratch stream, into the raw consumer.
type MixBaseline struct {
	RawFigure
	// CarddriftTotalMsPer1000 is the detection phase's CPU counted alike
	// (sideTotal), Ratio it over TotalMsPer1000.
	CarddriftTotalMsPer1000 *float64 `json:"carddriftTotalCpuMsPer1000Events,omitempty"`
	Ratio                   *float64 `json:"ratio,omitempty"`
}

// Efficient is the detection phase's stored messages published again as
// cheaply as NATS allows into the raw consumer.
type Efficient struct{ RawFigure }

// RawFigure is what the raw consumer's side of a cost figure spent on
// Events: its own CPU, serve's and the server's meanwhile, and
// TotalMsPer1000, the raw consumer's plus the server's (baselineTotal).
type RawFigure struct {
	Events          int64    `json:"events"`
	RawCPUMsPer1000 float64  `json:"rawCpuMsPer1000Events"`
	Cost            *Cost    `json:"cost"`
	TotalMsPer1000  *float64 `json:"totalCpuMsPer1000Events,omitempty"`
}

// scratchPublisher moves the lifecycle subjects (a2a.task.…) under a
// scratch stream's subject, so that the deployment's workers never see them.
type scratchPublisher struct {
	jetstream.Publisher
	subject string
}

func (p scratchPublisher) on(subject string) string {
	rest, ok := strings.CutPrefix(subject, "a2a.task")
	if !ok {
		return subject // not a lifecycle subject: left to fail as it would
	}
	return p.subject + rest
}

func (p scratchPublisher) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return p.Publisher.Publish(ctx, p.on(subject), data, opts...)
}

func (p scratchPublisher) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	m.Subject = p.on(m.Subject)
	return p.Publisher.PublishMsg(ctx, m, opts...)
}

func (p scratchPublisher) PublishAsync(subject string, data []byte, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	return p.Publisher.PublishAsync(p.on(subject), data, opts...)
}

func (p scratchPublisher) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	m.Subject = p.on(m.Subject)
	return p.Publisher.PublishMsgAsync(m, opts...)
}

// scratchConfig is what a scratch stream keeps of the lifecycle stream's.
func scratchConfig(lifecycle jetstream.StreamConfig) jetstream.StreamConfig {
	return jetstream.StreamConfig{Storage: lifecycle.Storage, Duplicates: lifecycle.Duplicates, MaxMsgSize: lifecycle.MaxMsgSize}
}

// benchMixBaseline plays the detection phase's traffic again (the same
// fleet, seed and schedule) for the raw consumer.
func benchMixBaseline(ctx context.Context, js jetstream.JetStream, f *benchFlags, lifecycle jetstream.StreamConfig, embedded bool) (*MixBaseline, error) {
	fl, err := startFleet(ctx, &f.demo)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	sched, err := fleet.Schedule(f.demo.seed, fl.Agents(), nil, f.demo.duration, f.demo.driftShare)
	if err != nil {
		return nil, usageError{err}
	}
	fig, _, err := f.runRaw(ctx, js, scratchConfig(lifecycle), embedded, func(ctx context.Context, s scratch) error {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		player, err := fl.Play(ctx, sched)
		if err != nil {
			return err
		}
		defer player.Stop()
		traffic, err := fleet.NewTraffic(fleet.TrafficOptions{
			JetStream: scratchPublisher{Publisher: js, subject: s.subject}, Schedule: sched, Start: player.Start(),
			Duration: f.demo.duration, Seed: f.demo.seed, TaskEvery: f.demo.taskEvery, Spanning: true, TaskPrefix: "baseline-",
		})
		if err != nil {
			return err
		}
		traffic.Run(ctx)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return &MixBaseline{RawFigure: fig}, nil
}

// Bounds of the efficient publisher's in-memory copy of the messages (so
// that reading them costs the server nothing while the figure is taken).
const (
	efficientMaxBytes   = 512 << 20
	efficientMaxPending = 4096
)

type storedMsg struct {
	msg *nats.Msg
	at  time.Time
}

var errEfficientTooLarge = errors.New("the detection phase's messages exceed the efficient publisher's copy bound")

// storedRange reads the a2a.task. messages of stream from sequence first
// to last (inclusive) into memory (at most efficientMaxBytes).
func storedRange(ctx context.Context, js jetstream.JetStream, stream string, first, last uint64) ([]storedMsg, error) {
	if last < first {
		return nil, nil
	}
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: first})
	if err != nil {
		return nil, err
	}
	var out []storedMsg
	var bytes int
	for {
		batch, err := c.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if md.Sequence.Stream > last {
				return out, nil
			}
			rest, ok := strings.CutPrefix(m.Subject(), "a2a.task.")
			if !ok {
				continue
			}
			if bytes += len(m.Data()) + len(m.Subject()); bytes > efficientMaxBytes {
				return nil, errEfficientTooLarge
			}
			out = append(out, storedMsg{msg: &nats.Msg{Subject: rest, Header: m.Headers(), Data: m.Data()}, at: md.Timestamp})
			if md.Sequence.Stream == last {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil // the range's end was trimmed away
		}
	}
}

// benchEfficient publishes the stored messages first to last again from
// one connection, asynchronously, each no earlier than its stored offset
// from the first, into the raw consumer.
func benchEfficient(ctx context.Context, nc *nats.Conn, f *benchFlags, lifecycle jetstream.StreamConfig, first, last uint64, embedded bool) (*Efficient, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(efficientMaxPending))
	if err != nil {
		return nil, err
	}
	msgs, err := storedRange(ctx, js, lifecycle.Name, first, last)
	if err != nil {
		return nil, fmt.Errorf("reading the detection phase's messages: %w", err)
	}
	if len(msgs) == 0 {
		return nil, errRawEmpty
	}
	fig, _, err := f.runRaw(ctx, js, scratchConfig(lifecycle), embedded, func(ctx context.Context, s scratch) error {
		start := time.Now()
		for _, m := range msgs {
			if wait := m.at.Sub(msgs[0].at) - time.Since(start); wait > time.Millisecond {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			m.msg.Subject = s.subject + "." + m.msg.Subject
			if _, err := js.PublishMsgAsync(m.msg); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return nil, err
	}
	return &Efficient{fig}, nil
}

// Ratios are DESIGN's cost bars and the events one core carries at the
// measured cost, each absent when a figure it needs was not read.
type Ratios struct {
	Deployment               *float64 `json:"deployment,omitempty"`
	Serve                    *float64 `json:"serve,omitempty"`
	Emitter                  *float64 `json:"emitter,omitempty"`
	DeploymentEventsPerCoreS *float64 `json:"deploymentEventsPerCoreSecond,omitempty"`
	ServeEventsPerCoreS      *float64 `json:"serveEventsPerCoreSecond,omitempty"`
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b <= 0 {
		return nil
	}
	r := *a / *b
	return &r
}

func perCore(ms *float64) *float64 {
	one := 1e6
	return ratio(&one, ms)
}

// ratios computes the bars from the detection phase's cost c and the
// figures b and e.
func ratios(c *Cost, b *MixBaseline, e *Efficient) *Ratios {
	r := &Ratios{DeploymentEventsPerCoreS: perCore(sideTotal(c)), ServeEventsPerCoreS: perCore(c.ServeCPUMsPer1000),
		Deployment: ratio(sideTotal(c), e.TotalMsPer1000), Emitter: ratio(b.TotalMsPer1000, e.TotalMsPer1000)}
	if !c.Embedded {
		r.Serve = ratio(c.ServeCPUMsPer1000, &b.RawCPUMsPer1000)
	}
	return r
}

// sideTotal is the deployment's CPU per 1,000 events: serve's process,
// plus a standalone server's. Nil when a figure was not read.
func sideTotal(c *Cost) *float64 {
	if c.ServeCPUMsPer1000 == nil {
		return nil
	}
	t := *c.ServeCPUMsPer1000
	if !c.Embedded {
		if c.ServerCPUMsPer1000 == nil {
			return nil
		}
		t += *c.ServerCPUMsPer1000
	}
	return &t
}

// baselineTotal is the server's work for a raw figure: serve's process
// with an embedded server (its workers idle), else the server's.
func baselineTotal(c *Cost) *float64 {
	if c.Embedded {
		return c.ServeCPUMsPer1000
	}
	return c.ServerCPUMsPer1000
}

func (b *MixBaseline) write(w io.Writer) {
	fmt.Fprintf(w, "baseline: the detection phase's traffic again (fleet, seed, schedule, duration) onto a scratch stream of the same server,\n"+
		"  consumed and acknowledged by one raw durable consumer, a process of its own: %d events\n", b.Events)
	fmt.Fprintf(w, "  raw consumer's CPU: %.0f ms per 1,000\n", b.RawCPUMsPer1000)
	c := b.Cost
	switch {
	case c.Embedded && c.ServeCPUMsPer1000 != nil:
		fmt.Fprintf(w, "  serve's process (its embedded server's work for the traffic; its workers idle): %.0f ms per 1,000\n", *c.ServeCPUMsPer1000)
		fmt.Fprintf(w, "  (the raw consumer crosses a process boundary to the server, serve's workers do not: its deliveries and acks\n"+
			"  cost the server more than the workers' do, so this baseline is a little high and the ratio flatters carddrift)\n")
	case !c.Embedded && c.ServerCPUMsPer1000 != nil:
		fmt.Fprintf(w, "  NATS server's CPU: %.0f ms per 1,000", *c.ServerCPUMsPer1000)
		if c.ServeCPUMsPer1000 != nil {
			fmt.Fprintf(w, " (serve, idle: %.0f)", *c.ServeCPUMsPer1000)
		}
		fmt.Fprintln(w)
	}
	if b.Ratio != nil {
		fmt.Fprintf(w, "  deployment's CPU per 1,000 events: carddrift %.0f ms, baseline %.0f ms: %.2f× the baseline\n",
			*b.CarddriftTotalMsPer1000, *b.TotalMsPer1000, *b.Ratio)
	} else {
		var why []string
		for _, k := range slices.Sorted(maps.Keys(c.NotRead)) {
			why = append(why, k+": "+c.NotRead[k])
		}
		fmt.Fprintf(w, "  (no ratio: a CPU figure was not read — %s)\n", strings.Join(why, "; "))
	}
}

func (e *Efficient) write(w io.Writer, r *Ratios) {
	fmt.Fprintf(w, "efficient publisher: the detection phase's %d stored messages again, from one connection, asynchronously, at the pace\n"+
		"  they were stored, onto a scratch stream consumed and acknowledged by one raw durable consumer, a process of its own\n", e.Events)
	fmt.Fprintf(w, "  raw consumer's CPU: %.0f ms per 1,000\n", e.RawCPUMsPer1000)
	if c := e.Cost; c.Embedded && c.ServeCPUMsPer1000 != nil {
		fmt.Fprintf(w, "  serve's process (its embedded server's work; its workers idle): %.0f ms per 1,000\n", *c.ServeCPUMsPer1000)
	} else if c.ServerCPUMsPer1000 != nil {
		fmt.Fprintf(w, "  NATS server's CPU: %.0f ms per 1,000\n", *c.ServerCPUMsPer1000)
	}
	if e.TotalMsPer1000 != nil {
		fmt.Fprintf(w, "  total: %.0f ms per 1,000\n", *e.TotalMsPer1000)
	}
	line := func(what string, v *float64, bar string) {
		if v == nil {
			fmt.Fprintf(w, "  %s: not read\n", what)
			return
		}
		fmt.Fprintf(w, "  %s: %.2f× (bar %s)\n", what, *v, bar)
	}
	fmt.Fprintln(w, "cost bars (DESIGN, contract v1.3):")
	line("deployment as shipped / efficient publisher + raw consumer", r.Deployment, "≤ 2.0")
	line("serve's own CPU / raw consumer's on the fleet's traffic", r.Serve, "≤ 2.5")
	line("the fleet's traffic as the emitter publishes it / the efficient publisher's (server + raw consumer)", r.Emitter, "≤ 1.25")
	if r.DeploymentEventsPerCoreS != nil {
		fmt.Fprintf(w, "  events per second per core: the deployment (serve + server) %.0f", *r.DeploymentEventsPerCoreS)
		if r.ServeEventsPerCoreS != nil {
			fmt.Fprintf(w, ", serve alone %.0f", *r.ServeEventsPerCoreS)
		}
		fmt.Fprintln(w)
	}
}

// rawConsumerCommand is the hidden command bench runs as a process of its
// own for its raw figures (crossing the process boundary serve's workers
// cross): one durable pull consumer that consumes and acknowledges. It
// prints "ready" once it consumes; when its stdin closes it flushes its
// acks, prints "done N T" (N acknowledged, the last at T, Unix ns) and
// exits 0. It exits 1 when its --timeout passes.
const rawConsumerCommand = "internal-raw-consumer"

type rawConsumerFlags struct {
	nats    natsFlags
	stream  string
	durable string
	timeout time.Duration
}

func runRawConsumer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f rawConsumerFlags
	fs := newFlagSet(rawConsumerCommand, &env{stderr: stderr})
	f.nats.registerClient(fs)
	fs.StringVar(&f.stream, "stream", "", "stream of the durable")
	fs.StringVar(&f.durable, "durable", "", "durable consumer to consume with")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "exit 1 after this")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := f.run(ctx, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "carddrift "+rawConsumerCommand+":", err)
		return 1
	}
	return exitOK
}

func (f *rawConsumerFlags) run(ctx context.Context, stdin io.Reader, stdout io.Writer) (err error) {
	if f.stream == "" || f.durable == "" {
		return usagef("--stream and --durable are required")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("--timeout %s passed", f.timeout))
	defer cancel()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = context.Cause(ctx) // whichever step it interrupted
		}
	}()
	stdinClosed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(stdinClosed)
	}()
	nc, js, err := f.nats.jetStream("carddrift-bench-raw")
	if err != nil {
		return err
	}
	defer nc.Close()
	cons, err := js.Consumer(ctx, f.stream, f.durable)
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", f.durable, f.stream, err)
	}
	var acked, last atomic.Int64
	cc, err := cons.Consume(func(m jetstream.Msg) {
		m.Ack()
		acked.Add(1)
		last.Store(time.Now().UnixNano())
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		return err
	}
	defer cc.Stop()
	fmt.Fprintln(stdout, "ready")
	select {
	case <-stdinClosed:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	// The acks are written; they leave this process before it says done.
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("flush the acks: %w", err)
	}
	fmt.Fprintln(stdout, "done", acked.Load(), last.Load())
	return nil
}

// rawProcess is a running raw consumer: the figure that started it ends it
// (finish, or kill on any error); its context's deadline kills it too.
type rawProcess struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.Closer
	lines  chan string // its stdout, line by line; closed at EOF
	stderr strings.Builder
}

// startRawConsumer starts this binary as the raw consumer of durable "raw"
// on stream, and waits until it consumes.
func startRawConsumer(ctx context.Context, nf *natsFlags, stream string, timeout time.Duration) (*rawProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("raw consumer: %w", err)
	}
	args := []string{rawConsumerCommand, "--stream", stream, "--durable", "raw", "--timeout", timeout.String(), "--nats-url", nf.url}
	for _, kv := range [][2]string{{"--creds", nf.creds}, {"--tls-cert", nf.tlsCert}, {"--tls-key", nf.tlsKey}, {"--tls-ca", nf.tlsCA}, {"--js-api-prefix", nf.apiPrefix}} {
		if kv[1] != "" {
			args = append(args, kv[0], kv[1])
		}
	}
	// A little more than the child's own timeout: it ends itself first.
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	p := &rawProcess{cmd: exec.CommandContext(ctx, exe, args...), cancel: cancel, lines: make(chan string, 4)}
	p.cmd.Stderr = &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	// The child's environment without CARDDRIFT_* (ff would read them as
	// its flags): what it needs is on its command line.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CARDDRIFT_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		cancel()
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("raw consumer: %w", err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	if _, err := p.expect(ctx, "ready"); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// expect waits for the next line of the child's stdout, which must start
// with word; it returns the rest of the line.
func (p *rawProcess) expect(ctx context.Context, word string) (string, error) {
	select {
	case line, ok := <-p.lines:
		if !ok {
			err := p.cmd.Wait()
			return "", fmt.Errorf("raw consumer exited before %q: %v: %s", word, err, strings.TrimSpace(p.stderr.String()))
		}
		rest, found := strings.CutPrefix(line, word)
		if !found {
			return "", fmt.Errorf("raw consumer said %q, want %q", line, word)
		}
		return strings.TrimSpace(rest), nil
	case <-ctx.Done():
		return "", fmt.Errorf("raw consumer: waiting for %q: %w", word, ctx.Err())
	}
}

// finish closes the raw consumer's stdin, waits for its "done n T" and its
// exit, and returns T and the CPU time the process used.
func (p *rawProcess) finish(ctx context.Context, n uint64) (last time.Time, cpu time.Duration, err error) {
	defer p.kill()
	p.stdin.Close()
	rest, err := p.expect(ctx, "done")
	if err != nil {
		return last, 0, err
	}
	var got uint64
	var ns int64
	if _, err := fmt.Sscan(rest, &got, &ns); err != nil || got != n {
		return last, 0, fmt.Errorf("raw consumer said done %q, want %d messages and a time", rest, n)
	}
	for range p.lines { // EOF: it is exiting
	}
	if err := p.cmd.Wait(); err != nil {
		return last, 0, fmt.Errorf("raw consumer: %w: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	st := p.cmd.ProcessState
	return time.Unix(0, ns), st.UserTime() + st.SystemTime(), nil
}

// kill ends the process if it still runs (its stdin closes, its context
// is cancelled: exec kills it) and releases its context; safe twice.
func (p *rawProcess) kill() {
	p.stdin.Close()
	p.cancel()
	if p.cmd.ProcessState == nil {
		p.cmd.Wait()
	}
}

// scratch is a stream of bench's own, CARDDRIFT_BENCH_<run> on
// carddrift.bench.<run>.>, with one durable pull consumer "raw".
type scratch struct {
	run, name, subject string
	drop               func() // deletes the stream
}

// newScratch creates a scratch stream with sc's storage and limits.
func newScratch(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) (scratch, error) {
	run := fmt.Sprint(time.Now().UnixNano())
	s := scratch{run: run, name: "CARDDRIFT_BENCH_" + run, subject: "carddrift.bench." + run}
	sc.Name, sc.Subjects = s.name, []string{s.subject + ".>"}
	st, err := js.CreateStream(ctx, sc)
	if err != nil {
		return scratch{}, fmt.Errorf("scratch stream: %w", err)
	}
	s.drop = func() { js.DeleteStream(context.WithoutCancel(ctx), s.name) }
	if _, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1000}); err != nil {
		s.drop()
		return scratch{}, err
	}
	return s, nil
}

var errRawEmpty = errors.New("the raw figure's traffic published no events")

// runRaw takes one raw figure: publish sends its events under a scratch
// stream's subject; the figure ends once the raw consumer has acked them all,
// took after the first publish.
func (f *benchFlags) runRaw(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, embedded bool,
	publish func(ctx context.Context, s scratch) error) (fig RawFigure, took time.Duration, err error) {
	s, err := newScratch(ctx, js, sc)
	if err != nil {
		return fig, 0, err
	}
	defer s.drop()
	proc, err := startRawConsumer(ctx, &f.nats, s.name, f.demo.duration+5*time.Minute)
	if err != nil {
		return fig, 0, err
	}
	defer proc.kill()
	before := f.cost.read(ctx)
	start := time.Now()
	if err := publish(ctx, s); err != nil {
		return fig, 0, err
	}
	st, err := js.Stream(ctx, s.name)
	if err != nil {
		return fig, 0, err
	}
	n := st.CachedInfo().State.Msgs
	if n == 0 {
		return fig, 0, errRawEmpty
	}
	if err := waitDrained(ctx, js, s.name, []string{"raw"}, 100*time.Millisecond, 5*time.Minute); err != nil {
		return fig, 0, fmt.Errorf("the raw consumer: %w", err)
	}
	after := f.cost.read(ctx)
	last, cpu, err := proc.finish(ctx, n)
	if err != nil {
		return fig, 0, err
	}
	fig = RawFigure{Events: int64(n), RawCPUMsPer1000: 1e6 * cpu.Seconds() / float64(n), Cost: f.cost.cost(before, after, int64(n), embedded)}
	if base := baselineTotal(fig.Cost); base != nil {
		t := *base + fig.RawCPUMsPer1000
		fig.TotalMsPer1000 = &t
	}
	return fig, last.Sub(start), nil
}
