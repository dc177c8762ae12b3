package fleet

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// DriveOptions are what Drive plays on a started fleet against carddrift,
// and where it reports.
type DriveOptions struct {
	// JetStream is where the traffic goes; the verdicts are read from
	// EventsStream (the card.* events) as a planner would.
	JetStream    jetstream.JetStream
	EventsStream string
	// Seed, Scenarios, Duration and DriftShare make the schedule; TaskEvery,
	// TaskPrefix and Hold the traffic (TrafficOptions).
	Seed       int64
	Scenarios  []string
	Duration   time.Duration
	DriftShare float64
	TaskEvery  time.Duration
	TaskPrefix string
	Hold       func() bool
	// Lease and FullFetch are the deployment's, for the scorecard
	// (ScoreInput).
	Lease     func(*Agent) time.Duration
	FullFetch time.Duration
	// Idle waits, after the traffic, until carddrift has handled it.
	Idle func()
	// Out, when not nil, gets a header naming Where and, with Verdicts, a
	// line per card.drift as the planner sees it; Progress, when not nil, a
	// line a second; Warn what went wrong without ending the round.
	Where    string
	Out      io.Writer
	Verdicts bool
	Progress io.Writer
	Warn     io.Writer
}

// LeaseFunc returns the lease carddrift runs for an agent, given the
// fetcher's clamps: its max-age, minLease for no-cache, defaultLease
// without caching headers.
func LeaseFunc(minLease, defaultLease, maxLease time.Duration) func(*Agent) time.Duration {
	return func(a *Agent) time.Duration {
		l := a.MaxAge()
		switch {
		case l > 0:
		case a.Caching() == CacheRevalidate:
			l = minLease
		default:
			l = defaultLease
		}
		return min(max(l, minLease), maxLease)
	}
}

// Drive plays one schedule on the fleet with its client traffic, watches
// the card.* events carddrift publishes as a planner would, and scores
// them. Run after run on one fleet (a soak) needs a TaskPrefix of its own
// for each.
func (f *Fleet) Drive(ctx context.Context, o DriveOptions) (Scorecard, error) {
	sched, err := Schedule(o.Seed, f.Agents(), o.Scenarios, o.Duration, o.DriftShare)
	if err != nil {
		return Scorecard{}, err
	}
	scenarioOf := map[string]string{}
	for _, as := range sched {
		scenarioOf[as.AgentURL] = as.Scenario
	}
	var mu sync.Mutex
	var received []Received
	var viewed atomic.Uint64 // the highest stream sequence the planner's view has seen
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := o.JetStream.OrderedConsumer(sctx, o.EventsStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	cancel()
	if err != nil {
		return Scorecard{}, fmt.Errorf("watch %s: %w", o.EventsStream, err)
	}
	// Stop does not wait for a callback under way, which may still run
	// after Drive returns: it reads only what Drive does not change.
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if md, err := m.Metadata(); err == nil && md.Sequence.Stream > viewed.Load() {
			viewed.Store(md.Sequence.Stream) // one callback at a time
		}
		ev, err := events.Decode(m)
		if err != nil {
			return
		}
		now := time.Now()
		mu.Lock()
		received = append(received, Received{Event: ev, At: now})
		mu.Unlock()
		if d, ok := ev.Data.(events.Drift); ok && o.Verdicts && o.Out != nil {
			onto := ""
			if d.Verdict.ReplanSkill != "" {
				onto = fmt.Sprintf(" (re-plan onto %q)", d.Verdict.ReplanSkill)
			}
			fmt.Fprintf(o.Out, "  %6.1fs  %-8s %-28s %-34s %s%s\n", now.Sub(start).Seconds(), strings.ToUpper(string(d.Verdict.Action)),
				cmp.Or(scenarioOf[d.AgentURL], "?"), d.TaskID, strings.Join(detector.RuleIDs(d.Findings), ", "), onto)
		}
	})
	if err != nil {
		return Scorecard{}, err
	}
	defer cc.Stop()
	if o.Out != nil {
		fmt.Fprintf(o.Out, "carddrift %d agents, %s, seed %d, scenarios %s\n", len(sched), o.Duration, o.Seed, strings.Join(o.Scenarios, ","))
		fmt.Fprintf(o.Out, "  %s; verdicts as a planner sees them:\n\n", o.Where)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	player, err := f.Play(runCtx, sched)
	if err != nil {
		return Scorecard{}, err
	}
	defer player.Stop()
	traffic, err := NewTraffic(TrafficOptions{
		JetStream: o.JetStream, Schedule: sched, Start: player.Start(), Duration: o.Duration,
		Seed: o.Seed, TaskEvery: o.TaskEvery, Hold: o.Hold, TaskPrefix: o.TaskPrefix, Spanning: true,
	})
	if err != nil {
		return Scorecard{}, err
	}
	trafficDone := make(chan struct{})
	go func() {
		defer close(trafficDone)
		traffic.Run(runCtx)
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-trafficDone:
			running = false
		case <-ctx.Done():
			stop()
			<-trafficDone
			return Scorecard{}, ctx.Err()
		case <-tick.C:
			if o.Progress != nil {
				mu.Lock()
				n := len(received)
				mu.Unlock()
				elapsed := time.Since(player.Start())
				fmt.Fprintf(o.Progress, "  [%4.0fs/%s] tasks %d, lifecycle events %d (%.0f/s), card events %d\n",
					elapsed.Seconds(), o.Duration, len(traffic.Tasks()), traffic.Sent(),
					float64(traffic.Sent())/max(elapsed.Seconds(), 1), n)
			}
		}
	}
	elapsed := time.Since(player.Start())
	o.Idle()
	// The last published events reach the planner's view: it has seen the
	// events stream up to its last message (bounded: a view that stopped).
	if err := waitViewed(ctx, o.JetStream, o.EventsStream, &viewed, time.Minute); err != nil && o.Warn != nil {
		fmt.Fprintln(o.Warn, "demo:", err)
	}
	if n := traffic.Held(); n > 0 && o.Progress != nil {
		fmt.Fprintf(o.Progress, "  new tasks held %d times while carddrift's backlog was over its bound\n", n)
	}

	mu.Lock()
	got := append([]Received(nil), received...)
	mu.Unlock()
	return Score(ScoreInput{
		Seed: o.Seed, Schedule: sched, Start: player.Start(), Duration: elapsed,
		Tasks: traffic.Tasks(), Sent: traffic.Sent(), Errors: traffic.Errors(), Received: got, Lease: o.Lease,
		Applied: player.Applied(), FullFetch: o.FullFetch,
	}), nil
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
