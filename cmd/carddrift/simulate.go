package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/store"
)

func simulateCommand(e *env) *ffcli.Command {
	var f demoFlags
	var nf natsFlags
	var minLease, defaultLease, maxLease, fullFetch, settle time.Duration
	fs := newFlagSet("simulate", e)
	nf.register(fs)
	fs.IntVar(&f.agents, "agents", 40, "simulated agents in the fleet")
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "how long the fleet drifts and clients send traffic")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the fleet, the schedule and the traffic")
	fs.StringVar(&f.scenarios, "scenarios", "all", "comma-separated scenarios to schedule")
	fs.BoolVar(&f.json, "json", false, "print only the scorecard, as one JSON object")
	fs.BoolVar(&f.quiet, "quiet", false, "no verdict lines")
	fs.DurationVar(&f.taskEvery, "task-every", time.Second, "each agent gets a new task this often")
	fs.DurationVar(&minLease, "min-lease", fetcher.DefaultMinLease, "the deployment's --min-lease (for the fetches-per-lease figure)")
	fs.DurationVar(&defaultLease, "default-lease", fetcher.DefaultDefaultLease, "the deployment's lease for cards without max-age")
	fs.DurationVar(&maxLease, "max-lease", fetcher.DefaultMaxLease, "the deployment's --max-lease")
	fs.DurationVar(&fullFetch, "full-fetch-interval", fetcher.DefaultFullFetchInterval, "the deployment's --full-fetch-interval")
	fs.DurationVar(&settle, "settle", 5*time.Second, "after the traffic, wait this long for the last verdicts")
	return &ffcli.Command{
		Name:       "simulate",
		ShortUsage: "carddrift simulate --nats-url URL [flags]",
		ShortHelp:  "the demo's fleet and traffic alone, against a real deployment of carddrift serve",
		LongHelp: "Runs the simulated fleet on loopback and publishes client traffic to --nats-url (default\n" +
			"nats://127.0.0.1:4222); the deployment's `carddrift serve` must be able to reach the fleet\n" +
			"(start it with --fetch-allow 127.0.0.0/8). Ends with the same scorecard as the demo.",
		FlagSet: fs,
		Exec: func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("simulate takes no arguments")
			}
			if f.duration < 5*time.Second {
				return usagef("--duration must be at least 5s")
			}
			names, err := fleet.ParseScenarios(f.scenarios)
			if err != nil {
				return usageError{err}
			}
			if nf.url == "" {
				nf.url = "nats://127.0.0.1:4222"
			}
			nc, err := nf.connect("carddrift-simulate")
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			cfg := store.DefaultConfig()
			card, err := driveFleet(ctx, e, js, cfg, &f, names, leaseFunc(minLease, defaultLease, maxLease), fullFetch,
				fmt.Sprintf("publishing to %s", nf.url), func() {
					select {
					case <-time.After(settle):
					case <-ctx.Done():
					}
				})
			if err != nil {
				return err
			}
			return reportScorecard(e, &f, card)
		},
	}
}
