package planner_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
)

// recorder is a Handler that records the verdicts it is given.
type recorder struct {
	mu  sync.Mutex
	got []planner.Verdict
}

func (r *recorder) handle(_ context.Context, v planner.Verdict) error {
	r.mu.Lock()
	r.got = append(r.got, v)
	r.mu.Unlock()
	return nil
}

func (r *recorder) tasks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, v := range r.got {
		out = append(out, v.TaskID)
	}
	slices.Sort(out)
	return out
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func subscribe(t *testing.T, js jetstream.JetStream, opts planner.Options, h planner.Handler) *planner.Subscription {
	t.Helper()
	sub, err := planner.Subscribe(context.Background(), js, opts, h)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(func() {
		sub.Stop()
		select {
		case <-sub.Closed():
		case <-time.After(10 * time.Second):
			t.Error("subscription did not close within 10s")
		}
	})
	return sub
}

var (
	v1         = cardSpec{Streaming: true, Skills: []skillSpec{{ID: "echo"}, {ID: "translate"}}}
	noStream   = cardSpec{Streaming: false, Skills: []skillSpec{{ID: "echo"}, {ID: "translate"}}}
	retitled   = cardSpec{Version: "1.0.1", Streaming: true, Skills: []skillSpec{{ID: "echo"}, {ID: "translate"}}}
	narrowedTr = cardSpec{Streaming: true, Skills: []skillSpec{{ID: "echo"}, {ID: "translate", OutputModes: []string{"application/pdf"}}}}
	streamEcho = detector.Requirements{SkillID: "echo", Streaming: true, Posture: detector.FailClosed}
	degradeTr  = detector.Requirements{SkillID: "translate", Streaming: true, Posture: detector.Degrade, Idempotent: true}
)

func TestSubscribeFilters(t *testing.T) {
	js, _ := withJS(t)
	a, b := "https://a.example", "https://b.example"
	abortA := drift(t, "abort-a", a, v1, noStream, streamEcho)
	replanB := drift(t, "replan-b", b, v1, noStream, degradeTr)
	contA := drift(t, "continue-a", a, v1, retitled, streamEcho)  // card-version-changed: info
	warnB := drift(t, "warning-b", b, v1, narrowedTr, streamEcho) // another skill narrowed: breaking, not touching
	if abortA.Verdict.Action != detector.Abort || replanB.Verdict.Action != detector.Replan || contA.Verdict.Action != detector.Continue || warnB.Verdict.Action != detector.Continue {
		t.Fatalf("fixture verdicts: %s %s %s %s", abortA.Verdict.Action, replanB.Verdict.Action, contA.Verdict.Action, warnB.Verdict.Action)
	}

	cases := []struct {
		name string
		opts planner.Options
		want []string
	}{
		{"all", planner.Options{}, []string{"abort-a", "continue-a", "replan-b", "warning-b"}},
		{"agent", planner.Options{Agent: "HTTPS://A.example:443/some/path"}, []string{"abort-a", "continue-a"}},
		{"actions", planner.Options{Actions: []detector.Action{detector.Abort, detector.Replan}}, []string{"abort-a", "replan-b"}},
		// warning-b's breaking finding does not touch its task (its touches say so).
		{"min-warning", planner.Options{MinSeverity: detector.Warning}, []string{"abort-a", "replan-b"}},
		{"min-breaking", planner.Options{MinSeverity: detector.Breaking}, []string{"abort-a", "replan-b"}},
		{"agent-and-action", planner.Options{Agent: b, Actions: []detector.Action{detector.Continue}}, []string{"warning-b"}},
	}
	recs := make([]*recorder, len(cases))
	for i, c := range cases {
		recs[i] = &recorder{}
		c.opts.Durable = "filters-" + c.name
		subscribe(t, js, c.opts, recs[i].handle)
	}
	publish(t, js, abortA, replanB, contA, warnB)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			natstest.Eventually(t, 10*time.Second, "durable idle", func() bool { return consumerIdle(t, js, "filters-"+c.name) })
			if got := recs[i].tasks(); !slices.Equal(got, c.want) {
				t.Errorf("delivered %v, want %v", got, c.want)
			}
		})
	}
}

func TestSubscribeVerdictFields(t *testing.T) {
	js, _ := withJS(t)
	rec := &recorder{}
	subscribe(t, js, planner.Options{Durable: "fields"}, rec.handle)
	d := drift(t, "task-1", "https://a.example", v1, noStream, streamEcho)
	publish(t, js, d)
	natstest.Eventually(t, 10*time.Second, "verdict", func() bool { return rec.len() == 1 })
	v := rec.got[0]
	if v.TaskID != "task-1" || v.AgentURL != d.AgentURL || v.CardURL != d.CardURL || v.Action != detector.Abort ||
		v.Posture != detector.FailClosed || v.Reason != d.Verdict.Reason || v.Pinned != d.Pinned || v.Live != d.Live || v.Trigger != d.Trigger {
		t.Errorf("verdict = %+v, want the fields of %+v", v, d)
	}
	if !hasRule(v.Findings, detector.RuleStreamingDisabled) {
		t.Errorf("findings = %+v, want streaming-disabled", v.Findings)
	}
	// The card.drift says which findings touch the task: exact, no store.
	if v.Impact != detector.Breaking || !v.ImpactExact || len(v.Impacting) != 1 || v.Impacting[0].Rule != detector.RuleStreamingDisabled {
		t.Errorf("impact = %v exact %v impacting %v, want exact breaking streaming-disabled", v.Impact, v.ImpactExact, v.Impacting)
	}
	if v.Delivery != 1 || v.Sequence == 0 || v.EventID == "" || v.Source != "carddrift/test-worker" || v.Time.IsZero() {
		t.Errorf("delivery %d sequence %d id %q source %q time %v", v.Delivery, v.Sequence, v.EventID, v.Source, v.Time)
	}
}

// A card.drift written before contract v1.1 does not say which findings
// touch the task. With the stores, the impact is recomputed exactly: a
// breaking change to another skill is no impact at all. Without a pin, it is
// what the action implies.
func TestSubscribeExactImpact(t *testing.T) {
	js, _ := withJS(t)
	ctx := context.Background()
	pins, cards := memstore.NewPins[task.Pin](), memstore.NewCards()
	agentURL := "https://a.example"
	for _, c := range []cardSpec{v1, narrowedTr, noStream} {
		raw := c.JSON()
		if err := cards.Put(ctx, digest(t, raw), raw); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []task.Pin{
		{TaskID: "other-skill", AgentURL: agentURL, Digest: digest(t, v1.JSON()), Requirements: streamEcho},
		{TaskID: "streams", AgentURL: agentURL, Digest: digest(t, v1.JSON()), Requirements: streamEcho},
	} {
		if _, err := pins.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{}
	subscribe(t, js, planner.Options{Durable: "exact", MinSeverity: detector.Warning, Pins: pins, Cards: cards}, rec.handle)
	all := &recorder{}
	subscribe(t, js, planner.Options{Durable: "exact-all", Pins: pins, Cards: cards}, all.handle)
	publishLegacy(t, js,
		drift(t, "other-skill", agentURL, v1, narrowedTr, streamEcho),
		drift(t, "streams", agentURL, v1, noStream, streamEcho),
		drift(t, "no-pin", agentURL, v1, narrowedTr, streamEcho), // falls back to the implied impact
	)
	natstest.Eventually(t, 10*time.Second, "verdicts delivered, durables idle", func() bool {
		return all.len() == 3 && rec.len() == 2 && consumerIdle(t, js, "exact") && consumerIdle(t, js, "exact-all")
	})
	if got, want := rec.tasks(), []string{"no-pin", "streams"}; !slices.Equal(got, want) {
		t.Errorf("MinSeverity warning delivered %v, want %v", got, want)
	}
	byTask := map[string]planner.Verdict{}
	for _, v := range all.got {
		byTask[v.TaskID] = v
	}
	if v := byTask["other-skill"]; !v.ImpactExact || v.Impact != 0 || len(v.Impacting) != 0 {
		t.Errorf("other-skill: exact %v impact %v impacting %v, want exact, none", v.ImpactExact, v.Impact, v.Impacting)
	}
	if v := byTask["streams"]; !v.ImpactExact || v.Impact != detector.Breaking || len(v.Impacting) != 1 || v.Impacting[0].Rule != detector.RuleStreamingDisabled {
		t.Errorf("streams: exact %v impact %v impacting %v, want exact breaking streaming-disabled", v.ImpactExact, v.Impact, v.Impacting)
	}
	if v := byTask["no-pin"]; v.ImpactExact || v.Impact != detector.Warning {
		t.Errorf("no-pin: exact %v impact %v, want implied warning", v.ImpactExact, v.Impact)
	}
}

// A handler error NAKs the verdict; it comes back with Delivery 2 after the
// delay. A panic counts as an error.
func TestSubscribeNakAndRedeliver(t *testing.T) {
	js, _ := withJS(t)
	var calls atomic.Int32
	var mu sync.Mutex
	var deliveries []uint64
	var at []time.Time
	subscribe(t, js, planner.Options{Durable: "nak", NakDelay: 200 * time.Millisecond}, func(_ context.Context, v planner.Verdict) error {
		mu.Lock()
		deliveries = append(deliveries, v.Delivery)
		at = append(at, time.Now())
		mu.Unlock()
		switch calls.Add(1) {
		case 1:
			return errors.New("planner busy")
		case 2:
			panic("planner bug")
		}
		return nil
	})
	publish(t, js, drift(t, "task-1", "https://a.example", v1, noStream, streamEcho))
	natstest.Eventually(t, 15*time.Second, "third delivery acked", func() bool {
		return calls.Load() >= 3 && consumerIdle(t, js, "nak")
	})
	time.Sleep(300 * time.Millisecond) // an ack would stop any further delivery
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(deliveries, []uint64{1, 2, 3}) {
		t.Errorf("deliveries = %v, want [1 2 3]", deliveries)
	}
	if gap := at[1].Sub(at[0]); gap < 150*time.Millisecond {
		t.Errorf("redelivered after %v, want about the 200ms NAK delay", gap)
	}
	if gap := at[2].Sub(at[1]); gap < 300*time.Millisecond {
		t.Errorf("second redelivery after %v, want the doubled delay (400ms)", gap)
	}
}

// A message on card.drift that is not a card.drift CloudEvent is
// terminated: never handed to the handler, never redelivered.
func TestSubscribeTerminatesUndecodable(t *testing.T) {
	js, _ := withJS(t)
	rec := &recorder{}
	var reported atomic.Int32
	subscribe(t, js, planner.Options{Durable: "term", OnError: func(err error) {
		if errors.Is(err, events.ErrMalformedEnvelope) {
			reported.Add(1)
		}
	}}, rec.handle)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "card.drift.a=2Eexample.task-1", Data: []byte("not a cloudevent")}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, drift(t, "task-2", "https://a.example", v1, noStream, streamEcho))
	natstest.Eventually(t, 10*time.Second, "durable idle", func() bool { return consumerIdle(t, js, "term") && rec.len() == 1 })
	if reported.Load() != 1 {
		t.Errorf("OnError saw %d malformed envelopes, want 1", reported.Load())
	}
	if got := rec.tasks(); !slices.Equal(got, []string{"task-2"}) {
		t.Errorf("handled %v, want [task-2]", got)
	}
}

// Stop cancels the running handler's context; Closed waits for it to
// return; verdicts not handled are redelivered to the next subscriber of the
// same durable.
func TestSubscribeStopAndResume(t *testing.T) {
	js, _ := withJS(t)
	started := make(chan string, 10)
	var canceled atomic.Bool
	sub, err := planner.Subscribe(context.Background(), js, planner.Options{Durable: "resume", AckWait: 2 * time.Second},
		func(ctx context.Context, v planner.Verdict) error {
			started <- v.TaskID
			<-ctx.Done()
			canceled.Store(true)
			time.Sleep(50 * time.Millisecond)
			return ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, drift(t, "task-1", "https://a.example", v1, noStream, streamEcho),
		drift(t, "task-2", "https://a.example", v1, noStream, streamEcho))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("handler not called")
	}
	sub.Stop()
	sub.Stop() // safe twice
	select {
	case <-sub.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("not closed after Stop")
	}
	if !canceled.Load() {
		t.Error("Closed before the handler returned")
	}

	rec := &recorder{}
	subscribe(t, js, planner.Options{Durable: "resume", AckWait: 2 * time.Second}, rec.handle)
	publish(t, js, drift(t, "task-3", "https://a.example", v1, noStream, streamEcho))
	natstest.Eventually(t, 15*time.Second, "all verdicts handled after resume", func() bool { return rec.len() >= 3 })
	if got := rec.tasks(); !slices.Equal(got, []string{"task-1", "task-2", "task-3"}) {
		t.Errorf("resumed durable handled %v, want every verdict", got)
	}
}

// Drain hands buffered verdicts to the handler, whose context stays live,
// then closes.
func TestSubscribeDrain(t *testing.T) {
	js, _ := withJS(t)
	release := make(chan struct{})
	var entered, handled atomic.Int32
	var ctxErr atomic.Value
	sub, err := planner.Subscribe(context.Background(), js, planner.Options{Durable: "drain"},
		func(ctx context.Context, v planner.Verdict) error {
			entered.Add(1)
			<-release
			if ctx.Err() != nil {
				ctxErr.Store(ctx.Err())
			}
			handled.Add(1)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var ds []events.Drift
	for i := range 5 {
		ds = append(ds, drift(t, taskName(i), "https://a.example", v1, noStream, streamEcho))
	}
	publish(t, js, ds...)
	// The client has them: its handler holds the first (a fixed 200ms
	// could end before any was delivered on a busy machine).
	natstest.Eventually(t, time.Minute, "a verdict delivered to the handler", func() bool { return entered.Load() > 0 })
	sub.Drain()
	close(release)
	select {
	case <-sub.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("not closed after Drain")
	}
	if ctxErr.Load() != nil {
		t.Errorf("handler context ended during Drain: %v", ctxErr.Load())
	}
	if handled.Load() == 0 {
		t.Error("Drain handled nothing")
	}
}

// The context given to Subscribe bounds the subscription.
func TestSubscribeContextEnds(t *testing.T) {
	js, _ := withJS(t)
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := planner.Subscribe(ctx, js, planner.Options{Durable: "ctx"}, (&recorder{}).handle)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-sub.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("not closed after the context ended")
	}
}

func TestSubscribeInvalidOptions(t *testing.T) {
	js, _ := withJS(t)
	h := (&recorder{}).handle
	for name, opts := range map[string]planner.Options{
		"no durable":   {},
		"bad durable":  {Durable: "a.b"},
		"bad agent":    {Durable: "d", Agent: "ftp://x"},
		"bad action":   {Durable: "d", Actions: []detector.Action{"explode"}},
		"bad severity": {Durable: "d", MinSeverity: 9},
		"bad stream":   {Durable: "d", Stream: "a b"},
	} {
		if _, err := planner.Subscribe(context.Background(), js, opts, h); !errors.Is(err, planner.ErrInvalidOptions) {
			t.Errorf("%s: Subscribe = %v, want ErrInvalidOptions", name, err)
		}
	}
	if _, err := planner.Subscribe(context.Background(), js, planner.Options{Durable: "d"}, nil); !errors.Is(err, planner.ErrInvalidOptions) {
		t.Errorf("nil handler: Subscribe = %v, want ErrInvalidOptions", err)
	}
	_, err := planner.Subscribe(context.Background(), js, planner.Options{Durable: "d", Stream: "NO_SUCH_STREAM"}, h)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("missing stream: Subscribe = %v, want jetstream.ErrStreamNotFound", err)
	}
}
