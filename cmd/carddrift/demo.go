package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/budget"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

type demoFlags struct {
	agents     int
	duration   time.Duration
	seed       int64
	scenarios  string
	json       bool
	dataDir    string
	quiet      bool
	taskEvery  time.Duration
	logLevel   string
	driftShare float64 // bench's --drift-share; 0.75 for demo and simulate
	httpAddr   string
	replayHTML string
	maxBacklog int
	heartbeat  time.Duration
}

func (f *demoFlags) register(fs *flag.FlagSet) {
	f.registerFleet(fs, 30*time.Second)
	fs.StringVar(&f.dataDir, "data-dir", "", "keep the JetStream store here for replay (default: a temporary store removed at exit)")
	fs.StringVar(&f.logLevel, "log-level", "error", "worker log level (logs go to stderr)")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:0", "while the demo runs, serve the fleet at /fleet and /fleet.json and metrics at /metrics here, loopback only (port 0: any free port; empty: off)")
	fs.StringVar(&f.replayHTML, "replay-html", "", "at the end, write the replay page of the whole run here (what carddrift replay --format html writes)")
	registerHeartbeat(fs, &f.heartbeat)
	fs.IntVar(&f.maxBacklog, "max-backlog", 0, "hold new tasks while carddrift has more lifecycle events than this to handle (0: never): on a machine slower than the traffic, fewer tasks instead of verdicts that come after the changes they judge are over")
}

// registerFleet adds the flags demo and simulate share.
func (f *demoFlags) registerFleet(fs *flag.FlagSet, duration time.Duration) {
	f.driftShare = 0.75
	fs.IntVar(&f.agents, "agents", 40, "simulated agents in the fleet")
	fs.DurationVar(&f.duration, "duration", duration, "how long the fleet drifts and clients send traffic")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the fleet, the schedule of card changes and the traffic (same seed, same schedule)")
	fs.StringVar(&f.scenarios, "scenarios", "all", "comma-separated scenarios to schedule: "+strings.Join(fleet.ScenarioNames(), ", "))
	fs.BoolVar(&f.json, "json", false, "print only the scorecard, as one JSON object")
	fs.BoolVar(&f.quiet, "quiet", false, "no verdict lines, only progress and the scorecard")
	fs.DurationVar(&f.taskEvery, "task-every", time.Second, "each agent gets a new task this often")
}

// notes is where demo and simulate say what to open: stderr with --json.
func (f *demoFlags) notes(e *env) io.Writer {
	if f.json {
		return e.stderr
	}
	return e.stdout
}

func (f *demoFlags) run(ctx context.Context, e *env) error {
	if f.agents < 1 {
		return usagef("--agents must be at least 1")
	}
	if f.duration < 5*time.Second {
		return usagef("--duration must be at least 5s (changes happen between a fifth and 95%% of it)")
	}
	names, err := fleet.ParseScenarios(f.scenarios)
	if err != nil {
		return usageError{err}
	}
	log, err := newLogger(e.stderr, "json", f.logLevel)
	if err != nil {
		return err
	}
	watch, err := newDemoWatch(f.httpAddr)
	if err != nil {
		return err
	}
	defer watch.close()
	var page *os.File // created first: a path that cannot be written fails before the run
	if f.replayHTML != "" {
		if page, err = os.Create(f.replayHTML); err != nil {
			return usagef("--replay-html: %v", err)
		}
	}
	defer func() {
		if page != nil { // the run ended before its page was written
			page.Close()
			os.Remove(f.replayHTML)
		}
	}()

	dir, storage := f.dataDir, jetstream.MemoryStorage
	if dir == "" {
		tmp, err := os.MkdirTemp("", "carddrift-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("--data-dir: %w", err)
		}
		storage = jetstream.FileStorage
	}
	cfg := store.DefaultConfig()
	cfg.Partitions, cfg.Storage, cfg.AckWait = 4, storage, 10*time.Second
	fetchOpts := fetcher.Options{
		Allow:    []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		MinLease: time.Second, DefaultLease: 2 * time.Second, MaxLease: 10 * time.Second, FullFetchInterval: 10 * time.Second,
		TotalTimeout: 3 * time.Second, ConnectTimeout: time.Second, ObserveHeartbeat: heartbeat(f.heartbeat),
	}
	lease := fleet.LeaseFunc(fetchOpts.MinLease, fetchOpts.DefaultLease, fetchOpts.MaxLease)

	// Two workers, as two replicas of serve would run, sharing leases and pins.
	svc, err := service.Open(ctx, service.Options{
		DataDir: dir, ConnName: "carddrift-demo", Config: cfg, Workers: 2, Registerer: watch.registerer(),
		Worker: worker.Options{Name: "demo-worker", Fetch: fetchOpts, Logger: log, DrainTimeout: 3 * time.Second},
		// serve's caches and budget: the demo shows what serve does.
		PinCache: servePinCache, PinCacheMaxAge: servePinCacheMaxAge, MemoryBudget: budget.Default,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	running, err := svc.Start(ctx, 15*time.Second)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("demo: %w", err)
	}
	defer running.Stop()
	if watch != nil {
		fmt.Fprintf(f.notes(e), "carddrift demo: watch the fleet at %s (and /fleet.json, /metrics) while the demo runs\n", watch.start(svc, log))
		defer watch.close() // before the service closes
	}

	var cost DemoCost
	if cost.HostRawPerSecond, err = hostRate(ctx, svc.JetStream(), cfg.Storage); err != nil {
		fmt.Fprintln(e.stderr, "demo: the host's raw consume+ack rate:", err)
	}
	if l, err := loadAvg(); err == nil {
		cost.LoadBefore = &l
	}
	cpu, _ := procCPU(os.Getpid())
	card, err := driveFleet(ctx, e, svc.JetStream(), cfg, f, names, lease, fetchOpts.FullFetchInterval, "embedded NATS at "+svc.URL()+", 2 workers", func() {
		// Judge once the backlog is handled: a drift still queued is late, not missed.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := svc.WaitDrained(wctx); err != nil {
			fmt.Fprintln(e.stderr, "demo:", err)
		}
	})
	now, _ := procCPU(os.Getpid())
	cost.Events, cost.CPUSeconds = card.Events, (now - cpu).Seconds()
	cost.CPUMsPer1000 = 1e6 * cost.CPUSeconds / float64(max(card.Events, 1))
	if stopErr := running.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	if page != nil {
		n, err := writeReplayPage(ctx, svc.JetStream(), cfg, svc.Stores().Cards, page)
		if err == nil {
			err = page.Close()
		}
		if err != nil {
			return fmt.Errorf("--replay-html: %w", err)
		}
		page = nil
		fmt.Fprintf(e.stderr, "carddrift demo: wrote the replay page %s (%d bytes)\n", f.replayHTML, n)
	}
	return reportScorecard(e, f, card, nil, &cost)
}

// seen prints a card the verdict used: label, short digest and time.
func seen(c *fleet.CardSeen) string {
	if c == nil {
		return "(none)"
	}
	d := c.Digest
	if len(d) > 19 {
		d = d[:19] + "…"
	}
	at := "time unknown"
	if !c.At.IsZero() {
		at = c.At.UTC().Format("15:04:05.000")
	}
	return fmt.Sprintf("%s (%s, %s)", c.Label, d, at)
}

func writeScorecard(w io.Writer, c *fleet.Scorecard) {
	fmt.Fprintf(w, "\nscorecard (seed %d, %d agents, %.0fs)\n\n", c.Seed, c.Agents, c.DurationSeconds)
	fmt.Fprintf(w, "  %-28s %6s %6s %8s %8s %6s %12s %7s %11s %12s\n", "scenario", "agents", "tasks", "injected", "detected", "missed", "false aborts", "drifts", "unreachable", "inconsistent")
	for _, n := range slices.Sorted(maps.Keys(c.Scenarios)) {
		s := c.Scenarios[n]
		mark := ""
		if !s.Exercised {
			mark = "  (not exercised)"
		}
		fmt.Fprintf(w, "  %-28s %6d %6d %8d %8d %6d %12d %7d %11d %12d%s\n", n, s.Agents, s.Tasks, s.Injected, s.Detected, s.Missed, s.FalseAborts, s.Drifts, s.Unreachable, s.Inconsistent, mark)
	}
	fmt.Fprintf(w, "\n  injected %d, detected %d (late %d), missed %d, false aborts %d, unreachable counted as drift %d\n",
		c.Injected, c.Detected, c.Late, c.Missed, c.FalseAborts, c.UnreachableAsDrift)
	fmt.Fprintf(w, "  split brain: injected %d, detected %d (card.inconsistent), missed %d, false %d\n",
		c.SplitBrain.Injected, c.SplitBrain.Detected, c.SplitBrain.Missed, c.SplitBrain.False)
	fmt.Fprintf(w, "  verdicts: abort %d, replan %d, continue %d\n", c.Verdicts["abort"], c.Verdicts["replan"], c.Verdicts["continue"])
	fmt.Fprintf(w, "  detection latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", c.LatencyMs.P50, c.LatencyMs.P99, c.LatencyMs.Max)
	fmt.Fprintf(w, "  fetches per agent per lease: mean %.2f, max %.2f\n", c.FetchesPerAgentPerLease, c.MaxFetchesPerLease)
	fmt.Fprintf(w, "  %d tasks, %d lifecycle events, %.0f events/s\n", c.Tasks, c.Events, c.EventsPerSecond)
	if c.PinRaced > 0 {
		fmt.Fprintf(w, "  %d first-fetch task(s) left unjudged: the card changed between the client's discovery and carddrift's first fetch\n", c.PinRaced)
	}
	for _, p := range c.Problems {
		if p.Agent != "" {
			fmt.Fprintf(w, "  %-18s %-26s %-14s expected %s; got %v\n", p.Kind, p.Agent, p.Scenario, p.Expected, p.Got)
			continue
		}
		fmt.Fprintf(w, "  %-11s %-34s %-26s profile %-10s pinned %-10s live %-10s expected %-8s got %v %v\n",
			p.Kind, p.Task, p.Scenario, p.Profile, p.Pinned, p.Live, p.Expected, p.Got, p.Rules)
		if p.PinnedCard != nil || p.Observation != nil {
			fmt.Fprintf(w, "  %-11s pin %s, observation used %s\n", "", seen(p.PinnedCard), seen(p.Observation))
		}
	}
	if c.Missed == 0 && c.FalseAborts == 0 && c.UnreachableAsDrift == 0 && c.SplitBrain.Missed == 0 && c.SplitBrain.False == 0 {
		fmt.Fprintln(w, "\n  every injected drift and split brain detected, no task falsely aborted")
	}
}

const hostProbeEvents = 20000

// DemoCost is what the demo's process spent per 1,000 lifecycle events,
// beside the host's raw consume+ack rate, so that hosts can be compared.
type DemoCost struct {
	Events           int64       `json:"events"`
	CPUSeconds       float64     `json:"cpuSeconds"`
	CPUMsPer1000     float64     `json:"cpuMsPer1000Events"`
	HostRawPerSecond float64     `json:"hostRawConsumeAckPerSecond"`
	LoadBefore       *[3]float64 `json:"loadBefore,omitempty"`
}

// hostRate is one durable pull consumer's consume+ack rate, in process,
// over hostProbeEvents messages of 512 bytes on a scratch stream.
func hostRate(ctx context.Context, js jetstream.JetStream, storage jetstream.StorageType) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := newScratch(ctx, js, jetstream.StreamConfig{Storage: storage})
	if err != nil {
		return 0, err
	}
	defer s.drop()
	body, msgs := bytes.Repeat([]byte("x"), 512), make([]*nats.Msg, hostProbeEvents)
	for i := range msgs {
		msgs[i] = &nats.Msg{Subject: fmt.Sprintf("%s.%d", s.subject, i), Data: body}
	}
	if err := publishAll(ctx, js, msgs); err != nil {
		return 0, err
	}
	c, err := js.Consumer(ctx, s.name, "raw")
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	var n int
	var first time.Time
	cc, err := c.Consume(func(m jetstream.Msg) {
		if n == 0 {
			first = time.Now()
		}
		m.Ack()
		if n++; n == hostProbeEvents {
			close(done)
		}
	})
	if err != nil {
		return 0, err
	}
	defer cc.Stop()
	select {
	case <-done:
		return float64(n) / time.Since(first).Seconds(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (c *DemoCost) write(w io.Writer) {
	fmt.Fprintf(w, "  the demo's process (clients, workers, embedded server): %.1f s of CPU for %d lifecycle events, %.0f ms per 1,000\n",
		c.CPUSeconds, c.Events, c.CPUMsPer1000)
	if c.HostRawPerSecond > 0 {
		fmt.Fprintf(w, "  this host: raw consume+ack %.0f msg/s (one durable pull consumer on the demo's server, before the run)", c.HostRawPerSecond)
		if c.LoadBefore != nil {
			fmt.Fprintf(w, ", load %.2f %.2f %.2f", c.LoadBefore[0], c.LoadBefore[1], c.LoadBefore[2])
		}
		fmt.Fprintln(w)
	}
}

// errNotLoopback: the demo's pages have no credentials.
var errNotLoopback = errors.New("not a loopback address (the demo serves its pages on loopback only)")

// listenLoopback listens on addr, which must name a loopback host.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host != "localhost" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%q: %w", host, errNotLoopback)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%s: %w", ln.Addr(), errNotLoopback)
	}
	return ln, nil
}

// demoWatch serves the demo's /fleet, /fleet.json and /metrics while it runs.
type demoWatch struct {
	reg  *prometheus.Registry
	ln   net.Listener
	stop func() // set by start
}

// newDemoWatch listens on addr (nil when ""), before the service registers.
func newDemoWatch(addr string) (*demoWatch, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := listenLoopback(addr)
	if err != nil {
		return nil, usagef("--http-addr: %v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &demoWatch{reg: reg, ln: ln}, nil
}

func (w *demoWatch) registerer() prometheus.Registerer {
	if w == nil {
		return nil
	}
	return w.reg
}

// start serves svc's pages as serve does and returns the fleet page's URL.
func (w *demoWatch) start(svc *service.Service, log zerolog.Logger) string {
	col := fleetCollector(svc, fetcher.DefaultConsistencyWindow, demoFleetRefresh)
	w.reg.MustRegister(col)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{Registry: w.reg}))
	mountFleet(mux, col, demoFleetRefresh)
	w.stop = serveHTTP(w.ln, mux, log)
	return "http://" + w.ln.Addr().String() + "/fleet"
}

// close stops serving; safe on a nil demoWatch, and more than once.
func (w *demoWatch) close() {
	if w == nil {
		return
	}
	if w.stop != nil {
		w.stop() // closes the listener
		w.stop = nil
	}
	w.ln.Close()
}

// writeReplayPage writes the replay page of the whole history to out.
func writeReplayPage(ctx context.Context, js jetstream.JetStream, cfg store.Config, cards store.Cards, out io.Writer) (int, error) {
	rd, err := replay.New(js, replay.Options{Config: cfg, Cards: cards})
	if err != nil {
		return 0, err
	}
	tl, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	if err := tl.WriteHTML(&buf); err != nil {
		return 0, err
	}
	return out.Write(buf.Bytes())
}

// fleetHint says where serve's /fleet page is, for simulate.
func fleetHint(ctx context.Context, metricsURL string) string {
	const how = "open /fleet on serve's --http-addr (default http://127.0.0.1:9464/fleet) to watch the fleet as carddrift sees it"
	u, err := url.Parse(metricsURL)
	if metricsURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return how
	}
	u.Path = strings.TrimSuffix(u.Path, "/metrics") + "/fleet"
	u.RawQuery, u.Fragment = "", ""
	page := u.String()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, page, nil)
	if err != nil {
		return how
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Sprintf("serve's fleet page is not reachable at %s (%v); %s", page, err, how)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("serve answers %d at %s; %s", resp.StatusCode, page, how)
	}
	return "the fleet as serve sees it: " + page
}

// How often the fleet page reloads itself and its census is taken at most.
const (
	fleetRefresh     = 10 * time.Second
	demoFleetRefresh = 2 * time.Second
)

// fleetCollector is the census behind the fleet gauges and pages; its Tally
// reads only what was written since the last.
func fleetCollector(svc *service.Service, window, refresh time.Duration) *census.Collector {
	st := svc.Stores()
	src := census.Source{Cards: st.Cards,
		Tally: census.NewTally(svc.JetStream(), st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: svc.Config().EventsStream})}
	return census.NewCollector(func(ctx context.Context) (*census.Fleet, error) {
		return census.Take(ctx, src, census.Options{Window: window})
	}, refresh)
}

// mountFleet serves /fleet and /fleet.json, read-only (GET and HEAD).
func mountFleet(mux *http.ServeMux, col *census.Collector, refresh time.Duration) {
	serve := func(contentType string, render func(*census.Fleet, io.Writer) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "read-only", http.StatusMethodNotAllowed)
				return
			}
			fl, err := col.Fleet(r.Context())
			if fl == nil {
				http.Error(w, "no census of the fleet: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			var buf bytes.Buffer
			if err := render(fl, &buf); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "no-store")
			w.Write(buf.Bytes())
		}
	}
	mux.HandleFunc("/fleet", serve("text/html; charset=utf-8", func(fl *census.Fleet, w io.Writer) error {
		return fl.WriteHTML(w, refresh)
	}))
	mux.HandleFunc("/fleet.json", serve("application/json", (*census.Fleet).WriteJSON))
}

// serveHTTP serves h on ln in a goroutine it owns, until the returned stop
// shuts it down (at most 5s for requests in flight) and waits for it.
func serveHTTP(ln net.Listener, h http.Handler, log zerolog.Logger) (stop func()) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		<-done
	}
}
