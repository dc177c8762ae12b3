package main

import (
	"context"
	"fmt"
	"time"

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
	nf.registerClient(fs)
	f.register(fs, 60*time.Second)
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
		Exec: noArgs("simulate", func(ctx context.Context) error {
			if f.duration < 5*time.Second {
				return usagef("--duration must be at least 5s")
			}
			names, err := fleet.ParseScenarios(f.scenarios)
			if err != nil {
				return usageError{err}
			}
			nc, js, err := nf.jetStream("carddrift-simulate")
			if err != nil {
				return err
			}
			defer nc.Close()
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
		}),
	}
}
