package fleet

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/internal/wait"
	"github.com/carddrift/carddrift/events/publish"
)

// TrafficOptions configure client traffic against a scheduled fleet.
type TrafficOptions struct {
	// JetStream gets the lifecycle events, through one client.Emitter.
	JetStream jetstream.Publisher
	// Start is the instant the schedule's offsets count from (Player.Start).
	Schedule []Assignment
	Start    time.Time
	// Duration bounds the traffic: every task starts and ends within it.
	Duration time.Duration
	Seed     int64
	// Defaults: a task per agent every 1s, 400ms between its events, 12
	// transitions before it completes.
	TaskEvery time.Duration
	StepEvery time.Duration
	Steps     int
	// Hold, when set, is asked before each new task: while true, no task
	// starts and the agent asks again HoldPoll (default 100ms) later.
	Hold     func() bool
	HoldPoll time.Duration
	// Spanning adds to every agent one never-held task that steps (every
	// SpanStepEvery, default 4 × StepEvery) from start to end, so that every
	// scenario's change meets a task planned before it.
	Spanning      bool
	SpanStepEvery time.Duration
	// TaskPrefix starts every task id, so that runs never reuse an id.
	TaskPrefix string
}

// maxTasks bounds the tasks in flight at once.
const maxTasks = 2000

func (o *TrafficOptions) setDefaults() {
	o.TaskEvery = defaults.Positive(o.TaskEvery, time.Second)
	o.StepEvery = defaults.Positive(o.StepEvery, 400*time.Millisecond)
	o.Steps = defaults.Positive(o.Steps, 12)
	o.HoldPoll = defaults.Positive(o.HoldPoll, 100*time.Millisecond)
	o.SpanStepEvery = defaults.Positive(o.SpanStepEvery, 4*o.StepEvery)
}

// SentEvent is one lifecycle event the traffic published. Capability marks
// a capability-dependent transition, Evidence an artifact whose media type
// the planned card does not declare.
type SentEvent struct {
	ID         string
	Type       string
	At         time.Time
	Capability bool
	Evidence   bool
}

// Task is one task the traffic drove: the card it planned against, how it
// told carddrift (PinSource) and what it sent.
type Task struct {
	ID           string
	AgentURL     string
	Profile      Profile
	PlannedLabel string
	PinSource    string
	Events       []SentEvent
}

// Traffic drives concurrent task lifecycles against a fleet through the
// contract's events, with client.Emitter. Run it once.
type Traffic struct {
	opts  TrafficOptions
	plans []*plan // one per assignment of the schedule, in its order
	mu    sync.Mutex
	tasks map[string]*Task
	sent  atomic.Int64
	errs  atomic.Int64
	held  atomic.Int64
}

// NewTraffic validates opts and returns a Traffic; it does not publish.
func NewTraffic(opts TrafficOptions) (*Traffic, error) {
	opts.setDefaults()
	if opts.JetStream == nil || len(opts.Schedule) == 0 || opts.Duration <= 0 {
		return nil, fmt.Errorf("%w: traffic needs a JetStream publisher, a schedule and a duration", ErrInvalidOptions)
	}
	plans := make([]*plan, len(opts.Schedule))
	for i := range opts.Schedule {
		plans[i] = newPlan(&opts.Schedule[i])
	}
	return &Traffic{opts: opts, plans: plans, tasks: map[string]*Task{}}, nil
}

// Sent counts the lifecycle events published, Errors the failed publishes,
// Held the tasks Hold kept from starting.
func (t *Traffic) Sent() int64   { return t.sent.Load() }
func (t *Traffic) Errors() int64 { return t.errs.Load() }
func (t *Traffic) Held() int64   { return t.held.Load() }

// Tasks returns every task started, by id.
func (t *Traffic) Tasks() map[string]*Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]*Task, len(t.tasks))
	for k, v := range t.tasks {
		cp := *v
		cp.Events = slices.Clone(v.Events)
		out[k] = &cp
	}
	return out
}

// Run starts tasks on every agent until Start+Duration and returns, its
// goroutines ended, once every task finished (or ctx is done) and what they
// published is acknowledged (within a minute; Errors counts what was not).
func (t *Traffic) Run(ctx context.Context) error {
	emit, err := client.NewEmitter(t.opts.JetStream, "carddrift-demo-client")
	if err != nil {
		return err
	}
	t.run(ctx, emit)
	cctx, cancel := context.Background(), context.CancelFunc(func() {})
	if ctx.Err() == nil {
		cctx, cancel = context.WithTimeout(ctx, time.Minute)
	}
	defer cancel()
	err = emit.Close(cctx)
	t.errs.Add(int64(emit.Dropped()))
	return err
}

func (t *Traffic) run(ctx context.Context, root *client.Emitter) {
	end := t.opts.Start.Add(t.opts.Duration)
	ctx, cancel := context.WithDeadline(ctx, end.Add(2*time.Second))
	defer cancel()
	sem := make(chan struct{}, maxTasks)
	var wg sync.WaitGroup
	short := taskShape{steps: t.opts.Steps, every: t.opts.StepEvery}
	for i, pl := range t.plans {
		if t.opts.Spanning {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(t.opts.Seed), uint64(i)+1<<32))
				start := t.opts.Start.Add(time.Duration(rng.Int64N(int64(t.opts.TaskEvery))))
				every := t.opts.SpanStepEvery // a pause is at most 1.5 × every
				if start.Add(3*every).After(end) || wait.Sleep(ctx, time.Until(start)) != nil {
					return
				}
				t.runTask(ctx, root, pl, -1, rng, taskShape{steps: math.MaxInt, every: every, until: end.Add(-3 * every)})
			})
		}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(t.opts.Seed), uint64(i)+1))
			next := t.opts.Start.Add(time.Duration(rng.Int64N(int64(t.opts.TaskEvery)))) // staggered
			for n := 0; ; n++ {
				if next.Add(time.Duration(short.steps+1)*short.every*3/2).After(end) || wait.Sleep(ctx, time.Until(next)) != nil {
					return
				}
				if t.opts.Hold != nil && t.opts.Hold() {
					t.held.Add(1)
					next = time.Now().Add(t.opts.HoldPoll)
					continue
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				seed := rng.Uint64()
				wg.Go(func() {
					defer func() { <-sem }()
					t.runTask(ctx, root, pl, n, rand.New(rand.NewPCG(seed, uint64(n))), short)
				})
				next = next.Add(t.opts.TaskEvery)
			}
		})
	}
	wg.Wait()
}

// holdPending is how many events the emitter may hold before a task waits
// for them to be stored, as a client slowed by its calls would.
const holdPending = publish.DefaultBuffer / 2

// taskShape: steps transitions, each after a pause of every/2 to 3/2 ×
// every, none after until (zero: no bound).
type taskShape struct {
	steps int
	every time.Duration
	until time.Time
}

// runTask plans one task against what the agent serves now and drives its
// lifecycle: submitted, shape.steps transitions, completed. n numbers the
// agent's short tasks; -1 is its spanning task.
func (t *Traffic) runTask(ctx context.Context, root *client.Emitter, pl *plan, n int, rng *rand.Rand, shape taskShape) {
	as := pl.as
	live := pl.liveLabels()
	if len(live) == 0 {
		return // discovery fails while the agent is down: no task
	}
	label := live[rng.IntN(len(live))]
	profiles := as.Plannable(label)
	if len(profiles) == 0 {
		return
	}
	p := profiles[rng.IntN(len(profiles))]
	id := fmt.Sprintf("%s%s-%s-%04d", t.opts.TaskPrefix, as.AgentID, p.Name, n)
	if n < 0 {
		id = fmt.Sprintf("%s%s-%s-span", t.opts.TaskPrefix, as.AgentID, p.Name)
	}
	task := &Task{ID: id, AgentURL: as.AgentURL, Profile: p, PlannedLabel: label}
	var seq atomic.Int64
	var lastID string // the id of the event last published
	emit, err := root.With(
		publish.WithIDs(func() string {
			lastID = task.ID + "/" + strconv.FormatInt(seq.Add(1), 10)
			return lastID
		}))
	if err != nil {
		t.errs.Add(1)
		return
	}

	evidence := false // set by an artifact step before it sends
	send := func(typ string, capability bool, publish func() error) bool {
		if root.Pending() > holdPending {
			root.Flush(ctx)
		}
		at := time.Now()
		if err := publish(); err != nil {
			t.errs.Add(1)
			return ctx.Err() == nil
		}
		t.sent.Add(1)
		t.mu.Lock()
		task.Events = append(task.Events, SentEvent{ID: lastID, Type: typ, At: at, Capability: capability, Evidence: evidence})
		t.mu.Unlock()
		evidence = false
		return true
	}
	status := func(state, skill string, capability bool) bool {
		return send(events.TypeStatus, capability, func() error {
			return emit.Status(ctx, events.Status{TaskID: task.ID, AgentURL: as.AgentURL, State: state, SkillID: skill})
		})
	}
	request := func(method string, capability bool) bool {
		return send(events.TypeRequest, capability, func() error {
			return emit.Request(ctx, events.Request{TaskID: task.ID, AgentURL: as.AgentURL, Method: method, Attempt: 1})
		})
	}

	req := p.Task
	sub := events.Submitted{
		TaskID: task.ID, AgentURL: as.AgentURL, SkillID: req.SkillID, Posture: req.Posture, Idempotent: req.Idempotent,
		Requires: events.Requires{Streaming: req.Streaming, PushNotifications: req.PushNotifications,
			InputModes: req.InputModes, OutputModes: req.OutputModes, Security: req.Security},
	}
	// An agent that varies its card by A2A-Version gets first-fetch pins
	// only: the client's negotiated card is not the one carddrift fetches.
	cv, _ := as.Version(label)
	switch mode := rng.IntN(3); {
	case as.Agent != nil && as.Agent.Varies(), mode == 2:
		task.PinSource = events.PinFirstFetch
	case mode == 0:
		sub.Card = cv.Raw
		task.PinSource = events.PinClientCard
	default:
		sub.CardDigest = cv.Digest
		task.PinSource = events.PinClientDigest
	}
	t.mu.Lock()
	t.tasks[task.ID] = task
	t.mu.Unlock()
	if !send(events.TypeSubmitted, false, func() error { return emit.Submitted(ctx, sub) }) {
		return
	}

	pause := func() bool {
		d := shape.every/2 + time.Duration(rng.Int64N(int64(shape.every)))
		return wait.Sleep(ctx, d) == nil
	}
	for step := 0; step < shape.steps && (shape.until.IsZero() || time.Now().Before(shape.until)); step++ {
		if !pause() {
			return
		}
		var ok bool
		switch k := rng.IntN(6); {
		case k == 0:
			ok = status("working", "", false)
		case k == 1 && req.Streaming:
			ok = request(pl.method[label], true)
		case k == 1:
			ok = request("tasks/get", false)
		case k == 2:
			ok = status("input-required", req.SkillID, true)
		case k == 3:
			mt := pl.artifactType(label, req.SkillID)
			evidence = !pl.declares(label, req.SkillID, mt)
			ok = send(events.TypeArtifact, true, func() error {
				return emit.Artifact(ctx, events.Artifact{TaskID: task.ID, AgentURL: as.AgentURL,
					ArtifactID: fmt.Sprintf("a%d", step), MediaTypes: []string{mt}})
			})
		case k == 4 && req.Streaming:
			ok = request("tasks/resubscribe", true)
		default:
			ok = status("TASK_STATE_AUTH_REQUIRED", "", true)
		}
		if !ok {
			return
		}
	}
	if pause() {
		status("completed", "", false)
	}
}

// plan is what the traffic reads of one assignment, computed once: each
// card parsed, its streaming method, and the labels served now.
type plan struct {
	as     *Assignment
	cards  map[string]*detector.Card // by label
	method map[string]string         // the streaming method by label

	mu     sync.Mutex
	known  bool
	gen    uint64   // the agent's serving generation served was read at
	served []string // the labels served at gen; shared, never written
}

func newPlan(as *Assignment) *plan {
	p := &plan{as: as, cards: map[string]*detector.Card{}, method: map[string]string{}}
	for _, c := range as.Cards {
		p.cards[c.Label], _ = detector.Parse(c.Raw) // Schedule parsed them
		p.method[c.Label] = "message/stream"
		for _, v := range p.cards[c.Label].ProtocolVersions() {
			if strings.HasPrefix(v, "1.") {
				p.method[c.Label] = "SendStreamingMessage"
				break
			}
			if strings.HasPrefix(v, "0.1") {
				p.method[c.Label] = "tasks/sendSubscribe"
				break
			}
		}
	}
	return p
}

// artifactType is the first output mode of skill in the card served now
// (else the planned one), made concrete.
func (p *plan) artifactType(planned, skill string) string {
	label := planned
	if live := p.liveLabels(); len(live) == 1 {
		label = live[0]
	}
	for _, c := range []*detector.Card{p.cards[label], p.cards[planned]} {
		s, ok := c.Skill(skill)
		if !ok {
			continue
		}
		if modes := c.OutputModes(s); len(modes) > 0 {
			return concrete(detector.NormalizeMediaType(modes[0]))
		}
	}
	return "text/plain"
}

func concrete(mt string) string {
	switch {
	case mt == "*/*" || mt == "":
		return "application/octet-stream"
	case strings.HasSuffix(mt, "/*"):
		top := strings.TrimSuffix(mt, "/*")
		if c, ok := map[string]string{"image": "image/png", "text": "text/plain", "audio": "audio/mpeg", "video": "video/mp4"}[top]; ok {
			return c
		}
		return top + "/octet-stream"
	}
	return mt
}

// declares reports whether card label declares mediaType for skill.
func (p *plan) declares(label, skill, mediaType string) bool {
	c := p.cards[label]
	modes := c.DefaultOutputModes
	if s, ok := c.Skill(skill); ok {
		modes = c.OutputModes(s)
	}
	return len(modes) == 0 || detector.Covers(modes, mediaType)
}

// liveLabels returns the labels of the cards served now (none while down),
// recomputed when the serving generation moves. Read the slice only.
func (p *plan) liveLabels() []string {
	a := p.as.Agent
	if a == nil {
		return nil
	}
	gen, outage := a.servedGen()
	if outage != Up {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.known || p.gen != gen {
		p.served, p.gen, p.known = nil, gen, true
		for _, raw := range a.Served() {
			for _, c := range p.as.Cards {
				if string(c.Raw) == string(raw) && !slices.Contains(p.served, c.Label) {
					p.served = append(p.served, c.Label)
				}
			}
		}
	}
	return p.served
}

// DriveOptions are what Drive plays on a started fleet, and where it reports.
type DriveOptions struct {
	// The traffic goes to JetStream; the verdicts are read from EventsStream.
	JetStream    jetstream.JetStream
	EventsStream string
	// Seed, Scenarios, Duration and DriftShare make the schedule.
	Seed       int64
	Scenarios  []string
	Duration   time.Duration
	DriftShare float64
	TaskEvery  time.Duration
	TaskPrefix string
	Hold       func() bool
	// Lease and FullFetch are the deployment's (ScoreInput).
	Lease     func(*Agent) time.Duration
	FullFetch time.Duration
	// Idle waits, after the traffic, until carddrift has handled it.
	Idle func()
	// Out gets a header naming Where and, with Verdicts, a line per
	// card.drift; Progress a line a second; Warn non-fatal errors.
	Where    string
	Out      io.Writer
	Verdicts bool
	Progress io.Writer
	Warn     io.Writer
}

// LeaseFunc returns the lease carddrift runs for an agent: its max-age,
// minLease for no-cache, defaultLease without caching headers, clamped.
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
// the card.* events as a planner would, and scores them. Runs on one fleet
// need a TaskPrefix each.
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
	// A callback may still run after Stop: it reads nothing Drive changes.
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

// waitViewed waits, at most bound, until *viewed (the highest sequence the
// planner's view delivered) reaches stream's last sequence.
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
