package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/store"
)

// simulateFlags are the flags of carddrift simulate.
type simulateFlags struct {
	demo       demoFlags
	nats       natsFlags
	deployment deploymentFlags
	cost       costFlags
}

// register adds simulate's flags.
func (f *simulateFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	f.demo.registerFleet(fs, 60*time.Second)
	f.deployment.register(fs, "the deployment's lease for cards without max-age")
	f.cost.register(fs)
}

// run checks the flags, connects and drives the fleet against the deployment.
func (f *simulateFlags) run(ctx context.Context, e *env) error {
	if f.demo.duration < 5*time.Second {
		return usagef("--duration must be at least 5s")
	}
	names, err := fleet.ParseScenarios(f.demo.scenarios)
	if err != nil {
		return usageError{err}
	}
	nc, js, err := f.nats.jetStream("carddrift-simulate")
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg := store.DefaultConfig()
	// First, before the verdicts: where serve shows the fleet.
	fmt.Fprintf(f.demo.notes(e), "carddrift simulate: %s\n", fleetHint(ctx, f.cost.metricsURL))
	before := f.cost.read(ctx)
	card, err := driveFleet(ctx, e, js, cfg, &f.demo, names, f.deployment.lease(), f.deployment.fullFetch,
		fmt.Sprintf("publishing to %s", f.nats.url), f.deployment.settled(ctx))
	if err != nil {
		return err
	}
	cost := f.cost.afterDrained(ctx, js, cfg.LifecycleStream, before, card.Events, embeddedServer(nc))
	return reportScorecard(e, &f.demo, card, cost, nil)
}
