package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// leaseFunc returns the lease carddrift runs for an agent, given the
// fetcher's clamps: its max-age, MinLease for no-cache, DefaultLease without
// caching headers.
func leaseFunc(minLease, defaultLease, maxLease time.Duration) func(*fleet.Agent) time.Duration {
	return func(a *fleet.Agent) time.Duration {
		l := a.MaxAge()
		switch {
		case l > 0:
		case a.Caching() == fleet.CacheRevalidate:
			l = minLease
		default:
			l = defaultLease
		}
		return min(max(l, minLease), maxLease)
	}
}

// deploymentFlags describe the deployment simulate and bench drive the fleet
// against: its lease clamps and full-fetch interval (for the
// fetches-per-lease figure), and how long its last verdicts may take.
type deploymentFlags struct {
	minLease     time.Duration
	defaultLease time.Duration
	maxLease     time.Duration
	fullFetch    time.Duration
	settle       time.Duration
}

// register adds the flags; defaultLeaseHelp describes --default-lease.
func (d *deploymentFlags) register(fs *flag.FlagSet, defaultLeaseHelp string) {
	fs.DurationVar(&d.minLease, "min-lease", fetcher.DefaultMinLease, "the deployment's --min-lease (for the fetches-per-lease figure)")
	fs.DurationVar(&d.defaultLease, "default-lease", fetcher.DefaultDefaultLease, defaultLeaseHelp)
	fs.DurationVar(&d.maxLease, "max-lease", fetcher.DefaultMaxLease, "the deployment's --max-lease")
	fs.DurationVar(&d.fullFetch, "full-fetch-interval", fetcher.DefaultFullFetchInterval, "the deployment's --full-fetch-interval")
	fs.DurationVar(&d.settle, "settle", 5*time.Second, "after the traffic, wait this long for the last verdicts")
}

// lease is the deployment's lease of an agent (leaseFunc).
func (d *deploymentFlags) lease() func(*fleet.Agent) time.Duration {
	return leaseFunc(d.minLease, d.defaultLease, d.maxLease)
}

// settled is driveFleet's idle for a deployment: it waits --settle, or
// until ctx ends.
func (d *deploymentFlags) settled(ctx context.Context) func() {
	return func() {
		select {
		case <-time.After(d.settle):
		case <-ctx.Done():
		}
	}
}

// driveFleet runs the simulated fleet and its client traffic against
// carddrift through js, watches the card.* events as a planner would, and
// scores them. idle waits until carddrift has handled everything sent.
func driveFleet(ctx context.Context, e *env, js jetstream.JetStream, cfg store.Config, f *demoFlags, names []string,
	lease func(*fleet.Agent) time.Duration, fullFetch time.Duration, where string, idle func()) (fleet.Scorecard, error) {
	fl, err := startFleet(ctx, f)
	if err != nil {
		return fleet.Scorecard{}, err
	}
	defer fl.Close()
	return driveRound(ctx, e, js, cfg, f, fl, names, lease, fullFetch, where, idle, "")
}

// startFleet builds the simulated fleet of --agents and --seed and starts
// it on loopback; the caller closes it.
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

// driveRound is driveFleet on a fleet already started: a schedule of
// f.duration from f.seed, its traffic (task ids starting with taskPrefix),
// and its scorecard. bench --soak plays one round after another on the
// same fleet.
func driveRound(ctx context.Context, e *env, js jetstream.JetStream, cfg store.Config, f *demoFlags, fl *fleet.Fleet, names []string,
	lease func(*fleet.Agent) time.Duration, fullFetch time.Duration, where string, idle func(), taskPrefix string) (fleet.Scorecard, error) {
	say := func(format string, args ...any) {
		if !f.json {
			fmt.Fprintf(e.stdout, format, args...)
		}
	}
	sched, err := fleet.ScheduleShare(f.seed, fl.Agents(), names, f.duration, f.share())
	if err != nil {
		return fleet.Scorecard{}, usageError{err}
	}

	// The planner's view: every card.* event as it is published.
	byURL := map[string]*fleet.Assignment{}
	for i := range sched {
		byURL[sched[i].AgentURL] = &sched[i]
	}
	var recvMu sync.Mutex
	var received []fleet.Received
	var viewed atomic.Uint64 // the highest stream sequence the planner's view has seen
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := js.OrderedConsumer(sctx, cfg.EventsStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	cancel()
	if err != nil {
		return fleet.Scorecard{}, fmt.Errorf("watch %s: %w", cfg.EventsStream, err)
	}
	// The callback reads its own copy: Stop does not wait for a callback
	// under way, which may still run after this function returns and its
	// caller changes f.
	verdictLines := !f.json && !f.quiet
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if md, err := m.Metadata(); err == nil && md.Sequence.Stream > viewed.Load() {
			viewed.Store(md.Sequence.Stream) // one callback at a time
		}
		ev, err := events.Decode(m)
		if err != nil {
			return
		}
		now := time.Now()
		recvMu.Lock()
		received = append(received, fleet.Received{Event: ev, At: now})
		recvMu.Unlock()
		if d, ok := ev.Data.(events.Drift); ok && verdictLines {
			scenario := "?"
			if as := byURL[d.AgentURL]; as != nil {
				scenario = as.Scenario
			}
			onto := ""
			if d.Verdict.ReplanSkill != "" {
				onto = fmt.Sprintf(" (re-plan onto %q)", d.Verdict.ReplanSkill)
			}
			fmt.Fprintf(e.stdout, "  %6.1fs  %-8s %-28s %-34s %s%s\n", now.Sub(start).Seconds(),
				strings.ToUpper(string(d.Verdict.Action)), scenario, d.TaskID, strings.Join(detector.RuleIDs(d.Findings), ", "), onto)
		}
	})
	if err != nil {
		return fleet.Scorecard{}, err
	}
	defer cc.Stop()

	say("carddrift %d agents, %s, seed %d, scenarios %s\n", len(sched), f.duration, f.seed, strings.Join(names, ","))
	say("  %s; verdicts as a planner sees them:\n\n", where)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	player, err := fl.Play(runCtx, sched)
	if err != nil {
		return fleet.Scorecard{}, err
	}
	defer player.Stop()
	var hold func() bool
	if f.maxBacklog > 0 {
		hold = holdOnBacklog(runCtx, js, cfg, uint64(f.maxBacklog))
	}
	traffic, err := fleet.NewTraffic(fleet.TrafficOptions{
		JetStream: js, Schedule: sched, Start: player.Start(), Duration: f.duration,
		Seed: f.seed, TaskEvery: f.taskEvery, Hold: hold, TaskPrefix: taskPrefix, Spanning: true,
		Logger: zerolog.New(e.stderr).With().Timestamp().Logger(),
	})
	if err != nil {
		return fleet.Scorecard{}, err
	}
	trafficDone := make(chan struct{})
	go func() {
		defer close(trafficDone)
		traffic.Run(runCtx)
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
progress:
	for {
		select {
		case <-trafficDone:
			break progress
		case <-ctx.Done():
			stop()
			<-trafficDone
			return fleet.Scorecard{}, ctx.Err()
		case <-tick.C:
			if f.json {
				continue
			}
			recvMu.Lock()
			n := len(received)
			recvMu.Unlock()
			elapsed := time.Since(player.Start())
			fmt.Fprintf(e.stderr, "  [%4.0fs/%s] tasks %d, lifecycle events %d (%.0f/s), card events %d\n",
				elapsed.Seconds(), f.duration, len(traffic.Tasks()), traffic.Sent(),
				float64(traffic.Sent())/max(elapsed.Seconds(), 1), n)
		}
	}
	elapsed := time.Since(player.Start())
	idle()
	// The last published events reach the planner's view: it has seen the
	// events stream up to its last message (bounded: a view that stopped).
	if err := waitViewed(ctx, js, cfg.EventsStream, &viewed, time.Minute); err != nil {
		fmt.Fprintln(e.stderr, "demo:", err)
	}
	if n := traffic.Held(); n > 0 && !f.json {
		fmt.Fprintf(e.stderr, "  new tasks held %d times while carddrift's backlog was over %d\n", n, f.maxBacklog)
	}

	recvMu.Lock()
	got := append([]fleet.Received(nil), received...)
	recvMu.Unlock()
	return fleet.Score(fleet.ScoreInput{
		Seed: f.seed, Schedule: sched, Start: player.Start(), Duration: elapsed,
		Tasks: traffic.Tasks(), Sent: traffic.Sent(), Errors: traffic.Errors(), Received: got, Lease: lease,
		Applied: player.Applied(), FullFetch: fullFetch,
	}), nil
}

// share is the share of the fleet's agents whose cards drift: --drift-share
// where the command has one, else (0) the demo's 0.75.
func (f *demoFlags) share() float64 {
	if f.driftShare == 0 {
		return 0.75
	}
	return f.driftShare
}

// holdOnBacklog returns a fleet.TrafficOptions.Hold that reports whether
// carddrift's backlog (service.Backlog of the lifecycle consumers) is over
// limit, read every 100ms by a goroutine that ends with ctx. Until the
// first read it does not hold; a read that fails holds until the next.
func holdOnBacklog(ctx context.Context, js jetstream.JetStream, cfg store.Config, limit uint64) func() bool {
	var over atomic.Bool
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			n, err := service.Backlog(rctx, js, cfg.LifecycleStream, cfg.ConsumerNames()...)
			cancel()
			// A backlog the server cannot report within 5s is taken as
			// over: that server is busier than the traffic should make it.
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

// waitViewed waits until *viewed (the highest stream sequence an ordered
// consumer of stream has delivered) reaches the stream's last sequence, for
// at most bound.
func waitViewed(ctx context.Context, js jetstream.JetStream, stream string, viewed *atomic.Uint64, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("%s: %w", stream, err)
	}
	last := s.CachedInfo().State.LastSeq
	for viewed.Load() < last {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the planner's view of %s reached %d of %d: %w", stream, viewed.Load(), last, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// reportScorecard prints the scorecard, with what the deployment's
// processes spent on it when cost is not nil (simulate), and decides the
// exit status.
func reportScorecard(e *env, f *demoFlags, card fleet.Scorecard, cost *Cost) error {
	if f.json {
		var doc any = card
		if cost != nil {
			doc = struct {
				fleet.Scorecard
				Cost *Cost `json:"cost"`
			}{card, cost}
		}
		if err := json.NewEncoder(e.stdout).Encode(doc); err != nil {
			return err
		}
	} else {
		writeScorecard(e.stdout, &card)
		if cost != nil {
			cost.write(e.stdout, "lifecycle events")
		}
	}
	if card.Missed > 0 || card.FalseAborts > 0 || card.UnreachableAsDrift > 0 || card.SplitBrain.Missed > 0 || card.SplitBrain.False > 0 {
		return exitError{exitFindings}
	}
	return nil
}

// waitDrained waits until none of the durables of stream has pending or
// unacknowledged messages, polling every so often, for at most bound
// (service.WaitDrained).
func waitDrained(ctx context.Context, js jetstream.JetStream, stream string, durables []string, every, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	return service.WaitDrained(ctx, js, stream, durables, every)
}
