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
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/test/internal/rig"
)

func main() { rig.Main(run) }

// soakFlags are soak's flags: the deployment, the fleet and its traffic,
// how long to drive it, in rounds of what length, and how often to sample.
type soakFlags struct {
	natsURL, creds, metricsURL  string
	agents                      int
	taskEvery                   time.Duration
	driftShare                  float64
	seed                        int64
	minLease, defaultLease      time.Duration
	maxLease, fullFetch, settle time.Duration
	duration, round, every      time.Duration
	out                         string
	json                        bool
}

func (s *soakFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.natsURL, "nats-url", nats.DefaultURL, "the deployment's NATS server")
	fs.StringVar(&s.creds, "creds", "", "NATS credentials file (empty: none)")
	fs.StringVar(&s.metricsURL, "metrics-url", "http://127.0.0.1:9464/metrics", "serve's /metrics (empty: not read)")
	fs.IntVar(&s.agents, "agents", 40, "agents the fleet starts on loopback (serve needs --fetch-allow 127.0.0.0/8)")
	fs.DurationVar(&s.taskEvery, "task-every", time.Second, "each agent gets a new task this often")
	fs.Float64Var(&s.driftShare, "drift-share", 0.75, "share of the agents whose cards drift in each round")
	fs.Int64Var(&s.seed, "seed", 1, "seed of the fleet and of the first round (each round adds one)")
	fs.DurationVar(&s.minLease, "min-lease", fetcher.DefaultMinLease, "the deployment's --min-lease (for the fetches-per-lease figure)")
	fs.DurationVar(&s.defaultLease, "default-lease", fetcher.DefaultDefaultLease, "the deployment's --default-lease")
	fs.DurationVar(&s.maxLease, "max-lease", fetcher.DefaultMaxLease, "the deployment's --max-lease")
	fs.DurationVar(&s.fullFetch, "full-fetch-interval", fetcher.DefaultFullFetchInterval, "the deployment's --full-fetch-interval")
	fs.DurationVar(&s.settle, "settle", 5*time.Second, "after each round's traffic, wait this long for its last verdicts")
	fs.DurationVar(&s.duration, "duration", 10*time.Minute, "how long to soak")
	fs.DurationVar(&s.round, "round", 5*time.Minute, "length of one round (one schedule of card changes and its traffic, "+
		"on the same fleet; each round's tasks have ids of their own)")
	fs.DurationVar(&s.every, "sample-every", time.Minute, "how often to sample")
	fs.StringVar(&s.out, "out", "", "write every sample here as a line of JSON (empty: not written)")
	fs.BoolVar(&s.json, "json", false, "print one JSON object")
}

// validate checks the flags of a soak.
func (s *soakFlags) validate() error {
	switch {
	case s.round < 30*time.Second:
		return errors.New("-round must be at least 30s")
	case s.every < time.Second:
		return errors.New("-sample-every must be at least 1s")
	case s.duration < s.every:
		return errors.New("-duration must be at least -sample-every")
	case s.driftShare < 0 || s.driftShare > 1:
		return errors.New("-drift-share must be between 0 and 1")
	}
	return nil
}

// run parses args, connects and soaks; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f soakFlags
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := f.validate(); err != nil {
		fmt.Fprintln(stderr, "soak:", err)
		return 2
	}
	opts := []nats.Option{nats.Name("carddrift-soak")}
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	nc, err := nats.Connect(f.natsURL, opts...)
	if err != nil {
		fmt.Fprintln(stderr, "soak:", err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		err = soak(ctx, stdout, js, store.DefaultConfig(), &f, nc.ConnectedServerName() == service.EmbeddedServerName)
	}
	if err != nil {
		fmt.Fprintln(stderr, "soak:", err)
		return 1
	}
	return 0
}

// soakMetrics are the series read from serve's /metrics at each sample,
// by their names there (the Go and process collectors serve registers).
var soakMetrics = []string{
	"process_resident_memory_bytes",
	"go_memstats_heap_inuse_bytes",
	"go_memstats_heap_objects",
	"go_goroutines",
	"process_open_fds",
	"process_cpu_seconds_total",
	"carddrift_events_total",
}

// SoakSample is one sample of a soak: serve's process figures, every
// stream of the server (a KV bucket is the stream KV_<bucket>; its
// subjects are its keys, deleted ones included until the server removes
// their markers) and the machine's load.
type SoakSample struct {
	At      time.Time `json:"at"`
	Minutes float64   `json:"minutes"`
	// Values are the series by name: serve's metrics under their
	// Prometheus names (a labelled one summed over its labels); the
	// stream.NAME.bytes, .messages, .subjects and .lastSeq of every stream;
	// backlog (the lifecycle durables' pending and unacknowledged events);
	// account.storeBytes.
	Values map[string]float64 `json:"values"`
	// Load is /proc/loadavg's 1, 5 and 15 minute averages: the machine is
	// shared.
	Load [3]float64 `json:"load"`
	// Errors are the readings that failed.
	Errors []string `json:"errors,omitempty"`
}

// soakSampler takes samples of a deployment.
type soakSampler struct {
	js         jetstream.JetStream
	metricsURL string
	lifecycle  string
	start      time.Time
}

// sample reads every series once, each reading bounded by 30 s.
func (s *soakSampler) sample(ctx context.Context) SoakSample {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	now := time.Now()
	out := SoakSample{At: now.UTC(), Minutes: now.Sub(s.start).Minutes(), Values: map[string]float64{}}
	fail := func(what string, err error) { out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", what, err)) }
	if s.metricsURL != "" {
		m, err := scrapeMetrics(ctx, s.metricsURL, soakMetrics)
		if err != nil {
			fail("metrics", err)
		}
		maps.Copy(out.Values, m)
	}
	streams := s.js.ListStreams(ctx)
	for info := range streams.Info() {
		st, p := info.State, "stream."+info.Config.Name+"."
		out.Values[p+"bytes"] = float64(st.Bytes)
		out.Values[p+"messages"] = float64(st.Msgs)
		out.Values[p+"subjects"] = float64(st.NumSubjects)
		out.Values[p+"lastSeq"] = float64(st.LastSeq)
	}
	if err := streams.Err(); err != nil {
		fail("streams", err)
	}
	if backlog, _, err := rig.Backlog(ctx, s.js, s.lifecycle); err != nil {
		fail("backlog", err)
	} else {
		out.Values["backlog"] = float64(backlog)
	}
	if ai, err := s.js.AccountInfo(ctx); err != nil {
		fail("account", err)
	} else {
		out.Values["account.storeBytes"] = float64(ai.Store)
	}
	var err error
	if out.Load, err = rig.LoadAvg(); err != nil {
		fail("load", err)
	}
	return out
}

// scrapeMetrics reads the series names from a Prometheus text exposition
// at url, each the sum of its labelled series (parseMetrics). A name
// missing from the page is an error.
func scrapeMetrics(ctx context.Context, url string, names []string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body, names)
}

// parseMetrics reads the series names from a Prometheus text exposition,
// each the sum of its series whatever their labels
// (carddrift_events_total: every event serve handled); it returns what it
// found, and an error naming those it did not, but for a counter (_total):
// a labelled one has no series until its first event.
func parseMetrics(r io.Reader, names []string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.IndexAny(line, " {")
		if i < 0 || !slices.Contains(names, line[:i]) {
			continue
		}
		name, rest := line[:i], line[i:]
		if rest[0] == '{' {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				return out, fmt.Errorf("%s: no end to its labels", name)
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return out, fmt.Errorf("%s: no value", name)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		out[name] += v
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	var missing []string
	for _, n := range names {
		if _, ok := out[n]; !ok && !strings.HasSuffix(n, "_total") {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("not on the page: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// SoakSeries is one series over a soak: its first, last, least and
// greatest values and its least-squares slope per hour, over the whole
// soak and over its second half (after the warm-up: a series that grows to
// a limit and stays there has a second-half slope near 0).
type SoakSeries struct {
	Name              string  `json:"name"`
	First             float64 `json:"first"`
	Last              float64 `json:"last"`
	Min               float64 `json:"min"`
	Max               float64 `json:"max"`
	PerHour           float64 `json:"perHour"`
	PerHourSecondHalf float64 `json:"perHourSecondHalf"`
	Samples           int     `json:"samples"`
}

// summarize returns every series of the samples, by name.
func summarize(samples []SoakSample) []SoakSeries {
	names := map[string]bool{}
	for _, s := range samples {
		for n := range s.Values {
			names[n] = true
		}
	}
	var out []SoakSeries
	for _, n := range slices.Sorted(maps.Keys(names)) {
		var xs, ys []float64
		for _, s := range samples {
			if v, ok := s.Values[n]; ok {
				xs, ys = append(xs, s.Minutes/60), append(ys, v)
			}
		}
		half := 0
		if len(xs) > 0 {
			mid := (xs[0] + xs[len(xs)-1]) / 2
			half = slices.IndexFunc(xs, func(x float64) bool { return x >= mid })
		}
		out = append(out, SoakSeries{
			Name: n, First: ys[0], Last: ys[len(ys)-1], Min: slices.Min(ys), Max: slices.Max(ys),
			PerHour: slope(xs, ys), PerHourSecondHalf: slope(xs[half:], ys[half:]), Samples: len(ys),
		})
	}
	return out
}

// slope is the least-squares slope of ys over xs; 0 for fewer than two
// distinct xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// SoakReport is a soak's result (its -json document).
type SoakReport struct {
	Agents         int          `json:"agents"`
	TaskEvery      string       `json:"taskEvery"`
	Rounds         []SoakRound  `json:"rounds"`
	Events         int64        `json:"lifecycleEvents"`
	Seconds        float64      `json:"seconds"`
	EmbeddedServer bool         `json:"embeddedServer"`
	Series         []SoakSeries `json:"series"`
	Samples        []SoakSample `json:"samples"`
	Problems       []string     `json:"problems,omitempty"`
}

// SoakRound is one round's traffic and detection.
type SoakRound struct {
	Seed            int64         `json:"seed"`
	Tasks           int           `json:"tasks"`
	Events          int64         `json:"lifecycleEvents"`
	EventsPerSecond float64       `json:"eventsPerSecond"`
	LatencyMs       fleet.Latency `json:"latencyMs"`
	Injected        int           `json:"injected"`
	Detected        int           `json:"detected"`
	Missed          int           `json:"missed"`
	FalseAborts     int           `json:"falseAborts"`
}

// soak drives the deployment with the simulated fleet's traffic for
// -duration, one round after another on the same fleet (the same agents),
// sampling it every -sample-every, and reports the curve of each series.
func soak(ctx context.Context, stdout io.Writer, js jetstream.JetStream, cfg store.Config, f *soakFlags, embedded bool) error {
	say := func(format string, args ...any) {
		if !f.json {
			fmt.Fprintf(stdout, format, args...)
		}
	}
	if _, err := js.Stream(ctx, cfg.LifecycleStream); err != nil {
		return fmt.Errorf("lifecycle stream %s: %w (is `carddrift serve` running against this server?)", cfg.LifecycleStream, err)
	}
	var out io.Writer = io.Discard
	if f.out != "" {
		file, err := os.Create(f.out)
		if err != nil {
			return err
		}
		defer file.Close()
		out = file
	}
	fl, err := fleet.New(fleet.Options{Agents: f.agents, Seed: f.seed})
	if err != nil {
		return err
	}
	if err := fl.Start(ctx); err != nil {
		return err
	}
	defer fl.Close()

	start := time.Now()
	end := start.Add(f.duration)
	sampler := &soakSampler{js: js, metricsURL: f.metricsURL, lifecycle: cfg.LifecycleStream, start: start}
	rep := &SoakReport{Agents: f.agents, TaskEvery: f.taskEvery.String(), EmbeddedServer: embedded}
	say("soak: %d agents on loopback, a task per agent every %s, %.0f%% drifting, for %s in rounds of %s; a sample every %s\n",
		f.agents, f.taskEvery, 100*f.driftShare, f.duration, f.round, f.every)
	if embedded {
		say("  (serve's embedded server: serve's RSS, heap and files include the NATS server's)\n")
	}
	var mu sync.Mutex // rep.Samples, out
	record := func(s SoakSample) {
		mu.Lock()
		defer mu.Unlock()
		rep.Samples = append(rep.Samples, s)
		if b, err := json.Marshal(s); err == nil {
			fmt.Fprintf(out, "%s\n", b)
		}
		say("  %s\n", sampleLine(s, cfg))
	}

	// The sampler: one goroutine, ended by stopSampling before the last
	// sample.
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(f.every)
		defer tick.Stop()
		record(sampler.sample(sctx))
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
				record(sampler.sample(sctx))
			}
		}
	}()
	stop := func() { stopSampling(); <-sampled }
	defer stop()

	settled := func() {
		select {
		case <-time.After(f.settle):
		case <-ctx.Done():
		}
	}
	for i := 0; time.Until(end) >= 10*time.Second; i++ { // a last round shorter than 10s would score nothing
		o := fleet.DriveOptions{
			JetStream: js, EventsStream: cfg.EventsStream,
			Seed: f.seed + int64(i), Duration: min(f.round, time.Until(end)), DriftShare: f.driftShare, TaskEvery: f.taskEvery,
			TaskPrefix: fmt.Sprintf("soak%03d-", i), Lease: fleet.LeaseFunc(f.minLease, f.defaultLease, f.maxLease),
			FullFetch: f.fullFetch, Idle: settled, Warn: os.Stderr,
		}
		card, err := fl.Drive(ctx, o)
		if err != nil {
			return err
		}
		r := SoakRound{Seed: o.Seed, Tasks: card.Tasks, Events: card.Events, EventsPerSecond: card.EventsPerSecond,
			LatencyMs: card.LatencyMs, Injected: card.Injected, Detected: card.Detected, Missed: card.Missed, FalseAborts: card.FalseAborts}
		rep.Rounds = append(rep.Rounds, r)
		rep.Events += card.Events
		say("  round %d (seed %d, %s): %d tasks, %d lifecycle events (%.0f/s), p50 %.1f ms, p99 %.1f ms; injected %d, detected %d, missed %d, false aborts %d\n",
			i+1, r.Seed, o.Duration.Round(time.Second), r.Tasks, r.Events, r.EventsPerSecond, r.LatencyMs.P50, r.LatencyMs.P99,
			r.Injected, r.Detected, r.Missed, r.FalseAborts)
	}
	stop()
	record(sampler.sample(ctx))
	rep.Seconds = time.Since(start).Seconds()
	rep.Series = summarize(rep.Samples)
	for _, s := range rep.Samples {
		for _, err := range s.Errors {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%.0f min: %s", s.Minutes, err))
		}
	}
	if f.json {
		return json.NewEncoder(stdout).Encode(rep)
	}
	writeSoakSummary(stdout, rep)
	return nil
}

// sampleLine is one sample as a line of progress.
func sampleLine(s SoakSample, cfg store.Config) string {
	v := s.Values
	var keys []string
	var bytes float64
	for n, x := range v {
		if strings.HasPrefix(n, "stream.") && strings.HasSuffix(n, ".bytes") {
			bytes += x
		}
		if name, ok := strings.CutPrefix(n, "stream.KV_"); ok {
			if b, ok := strings.CutSuffix(name, ".subjects"); ok {
				keys = append(keys, fmt.Sprintf("%s %.0f", b, x))
			}
		}
	}
	slices.Sort(keys)
	line := fmt.Sprintf("%5.1f min  rss %.0f MB, heap %.0f MB, goroutines %.0f, fds %.0f, cpu %.0f s; handled %.0f events; streams %.1f MB, %s %.0f events; KV keys: %s; backlog %.0f; load %.2f",
		s.Minutes, v["process_resident_memory_bytes"]/1e6, v["go_memstats_heap_inuse_bytes"]/1e6, v["go_goroutines"], v["process_open_fds"],
		v["process_cpu_seconds_total"], v["carddrift_events_total"], bytes/1e6, cfg.LifecycleStream, v["stream."+cfg.LifecycleStream+".lastSeq"],
		strings.Join(keys, ", "), v["backlog"], s.Load[0])
	if len(s.Errors) > 0 {
		line += "; failed: " + strings.Join(s.Errors, "; ")
	}
	return line
}

// writeSoakSummary prints the rounds' totals and every series.
func writeSoakSummary(w io.Writer, rep *SoakReport) {
	var missed, falseAborts, injected, detected int
	for _, r := range rep.Rounds {
		missed, falseAborts, injected, detected = missed+r.Missed, falseAborts+r.FalseAborts, injected+r.Injected, detected+r.Detected
	}
	fmt.Fprintf(w, "\nsoak: %d rounds, %d lifecycle events in %.0f s (%.0f/s); injected %d, detected %d, missed %d, false aborts %d\n",
		len(rep.Rounds), rep.Events, rep.Seconds, float64(rep.Events)/max(rep.Seconds, 1), injected, detected, missed, falseAborts)
	fmt.Fprintf(w, "\n  %-44s %14s %14s %14s %14s %16s %16s\n", "series", "first", "last", "min", "max", "slope/h", "slope/h 2nd half")
	for _, s := range rep.Series {
		fmt.Fprintf(w, "  %-44s %14.0f %14.0f %14.0f %14.0f %16.0f %16.0f\n", s.Name, s.First, s.Last, s.Min, s.Max, s.PerHour, s.PerHourSecondHalf)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
}
