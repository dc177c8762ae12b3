package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
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

// rigFlags are the rig's flags: the deployment and where its CPU is read,
// the fleet and its traffic, the deployment's leases (for the scorecard),
// and the baseline's raw consumer (carddrift's hidden command).
type rigFlags struct {
	natsURL, creds, carddrift   string
	cost                        costFlags
	agents                      int
	duration, taskEvery         time.Duration
	driftShare                  float64
	seed                        int64
	minLease, defaultLease      time.Duration
	maxLease, fullFetch, settle time.Duration
	baseline, json              bool
}

func (f *rigFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.natsURL, "nats-url", nats.DefaultURL, "the deployment's NATS server")
	fs.StringVar(&f.creds, "creds", "", "NATS credentials file (empty: none)")
	fs.StringVar(&f.cost.metricsURL, "metrics-url", "http://127.0.0.1:9464/metrics", "serve's /metrics, read before and after for its CPU "+
		"(process_cpu_seconds_total; empty: not read)")
	fs.IntVar(&f.cost.serverPID, "nats-server-pid", 0, "pid of the NATS server process when it runs on this machine apart from serve: "+
		"its CPU (/proc/PID/stat) is reported beside serve's (0: not read)")
	fs.StringVar(&f.carddrift, "carddrift", "carddrift", "the carddrift binary whose raw consumer (internal-raw-consumer) the baseline runs")
	fs.IntVar(&f.agents, "agents", 40, "agents the fleet starts on loopback (serve needs --fetch-allow 127.0.0.0/8)")
	fs.DurationVar(&f.duration, "duration", 30*time.Second, "how long the fleet sends traffic")
	fs.DurationVar(&f.taskEvery, "task-every", time.Second, "each agent gets a new task this often")
	fs.Float64Var(&f.driftShare, "drift-share", 0.75, "share of the agents whose cards drift")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the fleet, the schedule and the traffic")
	fs.DurationVar(&f.minLease, "min-lease", fetcher.DefaultMinLease, "the deployment's --min-lease (for the fetches-per-lease figure)")
	fs.DurationVar(&f.defaultLease, "default-lease", fetcher.DefaultDefaultLease, "the deployment's --default-lease")
	fs.DurationVar(&f.maxLease, "max-lease", fetcher.DefaultMaxLease, "the deployment's --max-lease")
	fs.DurationVar(&f.fullFetch, "full-fetch-interval", fetcher.DefaultFullFetchInterval, "the deployment's --full-fetch-interval")
	fs.DurationVar(&f.settle, "settle", 5*time.Second, "after the traffic, wait this long for the last verdicts")
	fs.BoolVar(&f.baseline, "baseline", true, "after the run, play its traffic again into a raw consumer (a process of its own) "+
		"on a scratch stream: the cost figure's baseline in the same arrangement (false: skip)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object")
}

// Report is the rig's result (its -json document): the run's scorecard,
// what the deployment spent on it, and the baseline.
type Report struct {
	Events    int64           `json:"events"`
	Scorecard fleet.Scorecard `json:"scorecard"`
	Cost      *Cost           `json:"cost"`
	Baseline  *MixBaseline    `json:"baseline,omitempty"`
}

// run parses args, connects and measures; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f rigFlags
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.duration < 5*time.Second || f.driftShare < 0 || f.driftShare > 1 {
		fmt.Fprintln(stderr, "cost: -duration must be at least 5s, -drift-share between 0 and 1")
		return 2
	}
	nc, js, err := service.ConnectJetStream(service.ConnectOptions{URL: f.natsURL, Creds: f.creds, Name: "carddrift-cost"})
	if err == nil {
		defer nc.Close()
		err = measure(ctx, stdout, js, store.DefaultConfig(), &f, nc.ConnectedServerName() == service.EmbeddedServerName)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cost:", err)
		return 1
	}
	return 0
}

// measure drives the fleet's mix against the deployment and reads what
// its processes spent on it, then (-baseline) what the same traffic costs
// with one raw consumer instead.
func measure(ctx context.Context, stdout io.Writer, js jetstream.JetStream, cfg store.Config, f *rigFlags, embedded bool) error {
	lc, err := js.Stream(ctx, cfg.LifecycleStream)
	if err != nil {
		return fmt.Errorf("lifecycle stream %s: %w (is `carddrift serve` running against this server?)", cfg.LifecycleStream, err)
	}
	fl, err := fleet.New(fleet.Options{Agents: f.agents, Seed: f.seed})
	if err != nil {
		return err
	}
	if err := fl.Start(ctx); err != nil {
		return err
	}
	defer fl.Close()
	before := f.cost.read(ctx)
	card, err := fl.Drive(ctx, fleet.DriveOptions{
		JetStream: js, EventsStream: cfg.EventsStream,
		Seed: f.seed, Duration: f.duration, DriftShare: f.driftShare, TaskEvery: f.taskEvery,
		Lease: fleet.LeaseFunc(f.minLease, f.defaultLease, f.maxLease), FullFetch: f.fullFetch, Warn: os.Stderr,
		Idle: func() {
			select {
			case <-time.After(f.settle):
			case <-ctx.Done():
			}
		},
	})
	if err != nil {
		return err
	}
	fl.Close() // the baseline starts a fleet of its own
	rep := Report{Events: card.Events, Scorecard: card,
		Cost: f.cost.afterDrained(ctx, js, cfg.LifecycleStream, before, card.Events, embedded)}
	if f.baseline {
		if rep.Baseline, err = mixBaseline(ctx, js, f, lc.CachedInfo().Config, embedded); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		rep.Baseline.compare(rep.Cost)
	}
	if f.json {
		return json.NewEncoder(stdout).Encode(rep)
	}
	fmt.Fprintf(stdout, "cost: %d agents, %s of the fleet's mix: %d tasks, %d lifecycle events (%.0f/s); missed %d, false aborts %d\n",
		card.Agents, f.duration, card.Tasks, card.Events, card.EventsPerSecond, card.Missed, card.FalseAborts)
	rep.Cost.write(stdout, "lifecycle events of the fleet's mix")
	if rep.Baseline != nil {
		rep.Baseline.write(stdout)
	}
	return nil
}
