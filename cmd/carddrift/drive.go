package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// deploymentFlags describe the deployment simulate and bench drive the fleet
// against (for the fetches-per-lease figure and the last verdicts).
type deploymentFlags struct {
	minLease     time.Duration
	defaultLease time.Duration
	maxLease     time.Duration
	fullFetch    time.Duration
	settle       time.Duration
}

func (d *deploymentFlags) register(fs *flag.FlagSet, defaultLeaseHelp string) {
	fs.DurationVar(&d.minLease, "min-lease", fetcher.DefaultMinLease, "the deployment's --min-lease (for the fetches-per-lease figure)")
	fs.DurationVar(&d.defaultLease, "default-lease", fetcher.DefaultDefaultLease, defaultLeaseHelp)
	fs.DurationVar(&d.maxLease, "max-lease", fetcher.DefaultMaxLease, "the deployment's --max-lease")
	fs.DurationVar(&d.fullFetch, "full-fetch-interval", fetcher.DefaultFullFetchInterval, "the deployment's --full-fetch-interval")
	fs.DurationVar(&d.settle, "settle", 5*time.Second, "after the traffic, wait this long for the last verdicts")
}

func (d *deploymentFlags) lease() func(*fleet.Agent) time.Duration {
	return fleet.LeaseFunc(d.minLease, d.defaultLease, d.maxLease)
}

// settled is driveFleet's idle for a deployment: it waits --settle.
func (d *deploymentFlags) settled(ctx context.Context) func() {
	return func() {
		select {
		case <-time.After(d.settle):
		case <-ctx.Done():
		}
	}
}

// driveFleet runs the fleet and its traffic against carddrift and scores
// the card.* events; idle waits until carddrift has handled everything.
func driveFleet(ctx context.Context, e *env, js jetstream.JetStream, cfg store.Config, f *demoFlags, names []string,
	lease func(*fleet.Agent) time.Duration, fullFetch time.Duration, where string, idle func()) (fleet.Scorecard, error) {
	fl, err := startFleet(ctx, f)
	if err != nil {
		return fleet.Scorecard{}, err
	}
	defer fl.Close()
	o := fleet.DriveOptions{
		JetStream: js, EventsStream: cfg.EventsStream,
		Seed: f.seed, Scenarios: names, Duration: f.duration, DriftShare: f.driftShare, TaskEvery: f.taskEvery,
		Lease: lease, FullFetch: fullFetch, Idle: idle, Where: where, Warn: e.stderr,
	}
	if f.maxBacklog > 0 {
		hctx, stop := context.WithCancel(ctx)
		defer stop()
		o.Hold = holdOnBacklog(hctx, js, cfg, uint64(f.maxBacklog))
	}
	if !f.json {
		o.Out, o.Verdicts, o.Progress = e.stdout, !f.quiet, e.stderr
	}
	card, err := fl.Drive(ctx, o)
	if errors.Is(err, fleet.ErrInvalidOptions) || errors.Is(err, fleet.ErrUnknownScenario) {
		return card, usageError{err}
	}
	return card, err
}

// startFleet starts the fleet of --agents and --seed; the caller closes it.
func startFleet(ctx context.Context, f *demoFlags) (*fleet.Fleet, error) {
	fl, err := fleet.New(fleet.Options{Agents: f.agents, Seed: f.seed})
	if err != nil {
		return nil, usageError{err}
	}
	if err := fl.Start(ctx); err != nil {
		return nil, err
	}
	return fl, nil
}

// holdOnBacklog reports whether carddrift's backlog is over limit, read
// every 100ms by a goroutine that ends with ctx.
func holdOnBacklog(ctx context.Context, js jetstream.JetStream, cfg store.Config, limit uint64) func() bool {
	var over atomic.Bool
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			n, err := service.Backlog(rctx, js, cfg.LifecycleStream, cfg.ConsumerNames()...)
			cancel()
			// A backlog not reported within 5s counts as over.
			over.Store(err != nil || n > limit)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return over.Load
}

// reportScorecard prints the scorecard, with cost (simulate) or demo's cost
// when not nil, and decides the exit status.
func reportScorecard(e *env, f *demoFlags, card fleet.Scorecard, cost *Cost, demo *DemoCost) error {
	if f.json {
		doc := struct {
			fleet.Scorecard
			Cost     *Cost     `json:"cost,omitempty"`
			DemoCost *DemoCost `json:"demoCost,omitempty"`
		}{card, cost, demo}
		if err := json.NewEncoder(e.stdout).Encode(doc); err != nil {
			return err
		}
	} else {
		writeScorecard(e.stdout, &card)
		if cost != nil {
			cost.write(e.stdout, "lifecycle events")
		}
		if demo != nil {
			demo.write(e.stdout)
		}
	}
	if card.Missed > 0 || card.FalseAborts > 0 || card.UnreachableAsDrift > 0 || card.SplitBrain.Missed > 0 || card.SplitBrain.False > 0 {
		return exitError{exitFindings}
	}
	return nil
}

// waitDrained is service.WaitDrained for at most bound.
func waitDrained(ctx context.Context, js jetstream.JetStream, stream string, durables []string, every, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	return service.WaitDrained(ctx, js, stream, durables, every)
}

type simulateFlags struct {
	demo       demoFlags
	nats       natsFlags
	deployment deploymentFlags
	cost       costFlags
}

func (f *simulateFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	f.demo.registerFleet(fs, 60*time.Second)
	f.deployment.register(fs, "the deployment's lease for cards without max-age")
	f.cost.register(fs)
}

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
