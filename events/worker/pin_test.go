package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/topology"
)

// newRig is the servicetest rig as this suite runs it: two partitions, one
// worker w1 (adjusted by configure), a client emitting as vendor A.
func newRig(t *testing.T, configure ...func(*worker.Options)) *servicetest.Rig {
	t.Helper()
	return servicetest.Start(t, servicetest.Options{
		Configure: func(c *store.Config) { c.Partitions = 2 },
		Source:    "urn:client:vendor-a",
		Workers:   []string{"w1"},
		Worker: func(o *worker.Options) {
			for _, c := range configure {
				c(o)
			}
		},
	})
}

// publishRaw publishes data as a binary-mode CloudEvent, as a client that
// does not use this module would.
func publishRaw(t *testing.T, js jetstream.JetStream, typ, id, taskID, data string) {
	t.Helper()
	m := nats.NewMsg("")
	m.Subject = typ + "." + events.Token(taskID)
	m.Header.Set("ce-specversion", "1.0")
	m.Header.Set("ce-id", id)
	m.Header.Set("ce-source", "urn:client:raw")
	m.Header.Set("ce-type", typ)
	m.Header.Set("content-type", "application/json")
	m.Data = []byte(data)
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// TestClientDigestOfUnseenCard is the first write-up's case end to end
// through a worker: the client pinned the card by digest at discovery, the
// vendor rotated the card before the task was submitted, so carddrift never
// sees the body the task was planned against. The pin is published without
// a fingerprint, the task gets one card.drift with pinned-card-unknown (abort
// under fail-closed, replan for an idempotent degrade task), the
// capability-dependent transition that follows does not repeat it, and
// nothing is dead-lettered.
func TestClientDigestOfUnseenCard(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	agent := servicetest.NewAgent(t, "")
	pinnedDigest, err := detector.Digest(agent.Served(servicetest.WriteupT0)) // what the client read at T0
	if err != nil {
		t.Fatal(err)
	}
	agent.Set(servicetest.WriteupT40) // T0+40s: the vendor rotates its card
	liveDigest, err := detector.Digest(agent.Served(servicetest.WriteupT40))
	if err != nil {
		t.Fatal(err)
	}
	url := agent.URL()

	// A minimal submission from a client that does not use this module:
	// defaults are fail-closed and not idempotent.
	publishRaw(t, r.JS, events.TypeSubmitted, "sub-1", "wu-fail-closed",
		`{"taskId":"wu-fail-closed","agentUrl":"`+url+`","skillId":"summarize","cardDigest":"`+pinnedDigest+`"}`)
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "wu-degrade", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, Idempotent: true, CardDigest: pinnedDigest}))
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "wu-degrade-once", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, CardDigest: pinnedDigest}))

	for _, tc := range []struct {
		task string
		want detector.Action
	}{
		{"wu-fail-closed", detector.Abort},
		{"wu-degrade", detector.Replan},
		{"wu-degrade-once", detector.Abort}, // degrade cannot re-plan a task that is not idempotent
	} {
		r.Eventually(tc.task+": card.pinned and card.drift", func() bool {
			return len(r.Out().Events(events.TypePinned, tc.task)) > 0 && len(r.Out().Events(events.TypeDrift, tc.task)) > 0
		})
		p := r.Out().Events(events.TypePinned, tc.task)[0].Data.(events.Pinned)
		if p.Source != events.PinClientDigest || p.Digest != pinnedDigest || p.Fingerprint != "" {
			t.Errorf("%s: card.pinned = %+v, want a client-digest pin of %s without fingerprint", tc.task, p, pinnedDigest)
		}
		checkUnknownDrift(t, tc.task, r.Out().Events(events.TypeDrift, tc.task)[0].Data.(events.Drift), pinnedDigest, liveDigest, tc.want)
	}

	// The capability-dependent transitions that follow meet the same cards:
	// no second card.drift.
	for _, task := range []string{"wu-fail-closed", "wu-degrade", "wu-degrade-once"} {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: url, Method: "tasks/sendSubscribe", Attempt: 1}))
	}
	r.Eventually("three transitions judged", func() bool { return r.Handled(events.TypeRequest, "drift") == 3 })
	for _, task := range []string{"wu-fail-closed", "wu-degrade", "wu-degrade-once"} {
		if n := len(r.Out().Events(events.TypeDrift, task)); n != 1 {
			t.Errorf("%s: %d card.drift, want 1", task, n)
		}
	}
	noDeadLetters(t, r)
}

// TestClientDigestUnknownAtTransition: the agent was down when the task was
// submitted by digest, so the pin could not be checked; the card came back
// rotated, and the first capability-dependent transition publishes
// pinned-card-unknown.
func TestClientDigestUnknownAtTransition(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	pinnedDigest, _ := detector.Digest(agent.Served(servicetest.WriteupT0))
	liveDigest, _ := detector.Digest(agent.Served(servicetest.WriteupT40))
	url := agent.URL()
	agent.SetStatus(http.StatusServiceUnavailable)

	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "down", AgentURL: url, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, CardDigest: pinnedDigest}))
	r.Eventually("card.unreachable and card.pinned", func() bool {
		return len(r.Out().Events(events.TypeUnreachable, "down")) == 1 && len(r.Out().Events(events.TypePinned, "down")) == 1
	})
	if p := r.Out().Events(events.TypePinned, "down")[0].Data.(events.Pinned); p.Fingerprint != "" || p.Source != events.PinClientDigest {
		t.Errorf("card.pinned = %+v, want a client-digest pin without fingerprint", p)
	}
	if len(r.Out().Events(events.TypeDrift, "down")) != 0 {
		t.Fatal("card.drift while the agent is unreachable: unreachable is not drift")
	}

	agent.Set(servicetest.WriteupT40)
	agent.SetStatus(http.StatusOK)
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "down", AgentURL: url, Method: "message/send", Attempt: 1})) // needs no card
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "down", AgentURL: url, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.drift", func() bool { return len(r.Out().Events(events.TypeDrift, "down")) > 0 })
	ev := r.Out().Events(events.TypeDrift, "down")[0]
	d := ev.Data.(events.Drift)
	checkUnknownDrift(t, "down", d, pinnedDigest, liveDigest, detector.Abort)
	if d.Trigger.Type != events.TypeRequest {
		t.Errorf("card.drift trigger = %+v, want the a2a.task.request that streams", d.Trigger)
	}
	noDeadLetters(t, r)
}

func checkUnknownDrift(t *testing.T, task string, d events.Drift, pinned, live string, want detector.Action) {
	t.Helper()
	if d.Pinned.Digest != pinned || d.Pinned.Fingerprint != "" || d.Live.Digest != live || d.Live.Fingerprint == "" {
		t.Errorf("%s: card.drift pinned %+v, live %+v; want pinned %s without fingerprint, live %s with one", task, d.Pinned, d.Live, pinned, live)
	}
	if len(d.Findings) != 1 || d.Findings[0].Rule != detector.RulePinnedCardUnknown || !d.Findings[0].Touches || !d.TouchesKnown {
		t.Errorf("%s: card.drift findings = %+v, want one pinned-card-unknown that touches the task", task, d.Findings)
	}
	if d.Verdict.Action != want {
		t.Errorf("%s: card.drift action = %s (%s), want %s", task, d.Verdict.Action, d.Verdict.Reason, want)
	}
}

// noDeadLetters checks that the dead-letter stream is empty and the worker
// counted no dead letter.
func noDeadLetters(t *testing.T, r *servicetest.Rig) {
	t.Helper()
	s, err := r.JS.Stream(context.Background(), r.Config.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("dead-letter stream holds %d events, want none", info.State.Msgs)
	}
	ch := make(chan prometheus.Metric, 64)
	r.Metrics.DeadLetters.Collect(ch)
	close(ch)
	if n := len(ch); n != 0 {
		t.Errorf("worker counted dead letters for %d reason(s), want none", n)
	}
	for _, typ := range []string{events.TypeSubmitted, events.TypeRequest} {
		if n := r.Handled(typ, "retry"); n != 0 {
			t.Errorf("%d %s events were retried, want none (a publish was refused?)", n, typ)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const otherDrift = "card.drift-of-another-worker"

// TestPinWriteConflict: a worker whose pin write-back conflicts with
// another writer's does not report success; handled again, it re-reads the
// pin and applies the event on top of the other write, and neither is
// lost.
func TestPinWriteConflict(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 0 }})
	ctx := context.Background()
	pins := r.SecondWriter(r.Stores.Pins, "", otherDrift)
	w := r.NewWorker("conflict", func(o *worker.Options) { o.Pins = pins })
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	ev := func(seq int, d events.Data) events.Event {
		return events.Event{ID: "e" + string(rune('0'+seq)), Source: "urn:test", Type: d.EventType(), Time: time.Unix(int64(100+seq), 0), Data: d}
	}
	handle := func(seq int, d events.Data) error {
		_, err := worker.HandleAt(ctx, w, ev(seq, d), uint64(seq), time.Now())
		return err
	}
	must(t, handle(1, events.Submitted{TaskID: "c", AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.FailClosed,
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))

	schemaError := events.Error{TaskID: "c", AgentURL: agent.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"}
	pins.Arm()
	err := handle(2, schemaError)
	if !errors.Is(err, worker.ErrPinChanged) {
		t.Fatalf("handle with a conflicting pin write = %v, want ErrPinChanged", err)
	}
	if pins.Writes() != 1 {
		t.Fatalf("second writer wrote %d times, want 1", pins.Writes())
	}
	pin, _, err := r.Stores.Pins.Get(ctx, "c")
	must(t, err)
	if !pin.SchemaErrorAt.IsZero() {
		t.Fatalf("the conflicting write replaced the other writer's pin: %+v", pin)
	}

	// Handled again (process retries it; else a redelivery): applied on top.
	must(t, handle(2, schemaError))
	pin, _, err = r.Stores.Pins.Get(ctx, "c")
	must(t, err)
	if pin.SchemaErrorSeq != 2 || pin.SchemaErrorCode != -32602 || !slices.Contains(pin.Reported, otherDrift) {
		t.Fatalf("pin = schema error seq %d code %d, reported %v; want seq 2, code -32602 and the other writer's %q",
			pin.SchemaErrorSeq, pin.SchemaErrorCode, pin.Reported, otherDrift)
	}
}

// TestConsumerRedeliversWithoutLimit: a worker updates a lifecycle consumer
// made by an older release (MaxDeliver 10, the server's give-up) to
// unlimited deliveries: only the worker gives up on an event, by
// dead-lettering it.
func TestConsumerRedeliversWithoutLimit(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.Partitions = 2 }})
	ctx := context.Background()
	for _, cc := range r.Config.LifecycleConsumers() {
		cc.MaxDeliver = topology.DefaultMaxDeliver // as e91b0a3 made it
		cc.PriorityGroups = []string{"carddrift"}
		cc.PriorityPolicy = jetstream.PriorityPolicyPinned
		cc.PinnedTTL = 2 * time.Second
		if _, err := r.JS.CreateOrUpdateConsumer(ctx, r.Config.LifecycleStream, cc); err != nil {
			t.Fatal(err)
		}
	}
	r.StartWorker("upgrade", nil)
	for _, name := range r.Config.ConsumerNames() {
		c, err := r.JS.Consumer(ctx, r.Config.LifecycleStream, name)
		must(t, err)
		info, err := c.Info(ctx)
		must(t, err)
		if info.Config.MaxDeliver != -1 {
			t.Errorf("consumer %s: MaxDeliver %d after the worker started, want -1", name, info.Config.MaxDeliver)
		}
	}
}

// TestShuffledDeliveryGivesSameVerdicts replays the pinning write-up's
// lifecycle for one task in every order a redelivery could produce (all 120
// permutations of its five events, each carrying its stream position) and
// asserts that the verdicts published are the same as in stream order:
// events before the submission wait for it, and a retry handled before the
// -32602 that precedes it in the stream is still judged a blind retry.
func TestShuffledDeliveryGivesSameVerdicts(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) {
		c.Partitions, c.AckWait = 0, time.Second
	}})
	js, cfg := r.JS, r.Config
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT40) // live since before the events
	pinned := agent.Served(servicetest.WriteupT0)
	w := r.NewWorker("order", func(o *worker.Options) { o.PinnedTTL = 0 })

	lifecycle := func(task string) []events.Event {
		ds := []events.Data{
			events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.FailClosed,
				Requires: events.Requires{Streaming: true}, Card: pinned},
			events.Request{TaskID: task, AgentURL: agent.URL(), Method: "tasks/sendSubscribe", Attempt: 1},
			events.Status{TaskID: task, AgentURL: agent.URL(), State: "input-required", SkillID: "translate"},
			events.Error{TaskID: task, AgentURL: agent.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"},
			events.Request{TaskID: task, AgentURL: agent.URL(), Method: "tasks/send", Attempt: 2},
		}
		out := make([]events.Event, len(ds))
		for i, d := range ds {
			out[i] = events.Event{ID: fmt.Sprintf("%s-%d", task, i), Source: "urn:test", Type: d.EventType(), Time: time.Unix(int64(100+i), 0), Data: d}
		}
		return out
	}

	// verdicts runs the events in the given delivery order (redelivering
	// those told to wait at the end) and returns the rule sets and actions of
	// the card.drift events published for the task.
	verdicts := func(task string, order []int) []string {
		evs := lifecycle(task)
		queue := slices.Clone(order)
		stored := time.Now()
		for n := 0; len(queue) > 0; n++ {
			if n > 50 {
				t.Fatalf("%s: events keep waiting: %v", task, queue)
			}
			i := queue[0]
			queue = queue[1:]
			wait, err := worker.HandleAt(ctx, w, evs[i], uint64(i+1), stored)
			switch {
			case wait:
				queue = append(queue, i) // NAKed: redelivered later
			case err != nil:
				t.Fatalf("%s: handle event %d: %v", task, i, err)
			}
		}
		filter := "card.drift.*." + events.Token(task)
		stream, err := js.Stream(ctx, cfg.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		total := uint64(0)
		for _, c := range info.State.Subjects {
			total += c
		}
		cons, err := js.OrderedConsumer(ctx, cfg.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range total {
			m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			d := ev.Data.(events.Drift)
			var rules []string
			for _, f := range d.Findings {
				if !slices.Contains(rules, f.Rule) {
					rules = append(rules, f.Rule)
				}
			}
			sort.Strings(rules)
			got = append(got, string(d.Verdict.Action)+" "+strings.Join(rules, ","))
		}
		sort.Strings(got)
		return got
	}

	want := verdicts("in-order", []int{0, 1, 2, 3, 4})
	if len(want) != 3 {
		t.Fatalf("in stream order: %d card.drift, want 3 (card diff, +unmodeled-skill, +blind-retry): %v", len(want), want)
	}
	for _, needle := range []string{detector.RuleUnmodeledSkill, detector.RuleBlindRetry, detector.RuleStreamingDisabled} {
		if !strings.Contains(strings.Join(want, "|"), needle) {
			t.Fatalf("in stream order, no %s: %v", needle, want)
		}
	}
	n := 0
	for _, perm := range permutations([]int{0, 1, 2, 3, 4}) {
		n++
		task := fmt.Sprintf("perm-%d", n)
		if got := verdicts(task, perm); !slices.Equal(got, want) {
			t.Errorf("delivery order %v: verdicts %v, want %v", perm, got, want)
		}
	}
	if n != 120 {
		t.Fatalf("ran %d permutations, want 120", n)
	}
}

func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// TestStaleLeaseCannotContradictPin reproduces, deterministically, the race
// that made the 400-agent demo abort healthy tasks: a lease holds the
// agent's old card (fetched before the rotation, valid for a minute); the
// vendor rotates the card; a client discovers the new card and submits a
// task pinned on it; the task's capability-dependent transition comes inside
// the lease. The lease's observation was verified before the pin, so it
// cannot contradict it: the worker revalidates unconditionally (one fetch)
// and finds the pinned card live — no card.drift.
func TestStaleLeaseCannotContradictPin(t *testing.T) {
	r := newRig(t, func(o *worker.Options) {
		o.Fetch.MinLease = time.Minute // the lease holds for the whole test
	})
	ctx := context.Background()
	// The agent serves its card with a long max-age and an ETag derived from
	// the card's version only (as some servers do): after a rotation that
	// keeps the version, a revalidation answers 304 although the content
	// changed.
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	agent.SetCacheControl("max-age=60")
	agent.SetETag(`"v1.0.0"`)
	url := agent.URL()

	// A first-fetch task makes carddrift take the lease on the old card.
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "early", AgentURL: url, SkillID: "summarize"}))
	r.Eventually("the early task's pin", func() bool { return len(r.Out().Events(events.TypePinned, "early")) == 1 })
	oldDigest := r.Out().Events(events.TypePinned, "early")[0].Data.(events.Pinned).Digest

	// The vendor rotates (same version, so the same ETag); the client reads
	// the new card and plans a streaming-free task against it.
	agent.Set(servicetest.WriteupT40)
	newCard := string(agent.Served(servicetest.WriteupT40))
	newDigest, err := detector.Digest([]byte(newCard))
	if err != nil {
		t.Fatal(err)
	}
	if newDigest == oldDigest {
		t.Fatal("the rotation did not change the digest")
	}
	time.Sleep(20 * time.Millisecond) // the pin is made after the lease's full fetch
	before := agent.Requests()
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "late", AgentURL: url, SkillID: "translate", Card: []byte(newCard)}))
	r.Eventually("the late task's pin", func() bool { return len(r.Out().Events(events.TypePinned, "late")) == 1 })
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "late", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	r.Eventually("the transition handled", func() bool {
		return r.Handled(events.TypeRequest, "unchanged")+r.Handled(events.TypeRequest, "drift") == 1
	})

	if d := r.Out().Events(events.TypeDrift, "late"); len(d) != 0 {
		dr := d[0].Data.(events.Drift)
		t.Fatalf("card.drift for a task pinned on the live card: %s, live %s (pinned %s)", dr.Verdict.Reason, dr.Live.Digest, dr.Pinned.Digest)
	}
	if got := agent.Requests() - before; got != 1 {
		t.Fatalf("the agent answered %d requests for the transition, want exactly 1 (the unconditional revalidation)", got)
	}
	if n := r.Handled(events.TypeRequest, "unchanged"); n != 1 {
		t.Fatalf("transition outcome unchanged = %d, want 1", n)
	}
}

// refusingCards lets the first refusals Puts fail, as a full store or one
// slower than the fetcher's StoreTimeout does.
type refusingCards struct {
	store.Cards
	refusals atomic.Int64
}

func (c *refusingCards) Put(ctx context.Context, digest string, raw []byte) error {
	if c.refusals.Add(-1) >= 0 {
		return errors.New("insufficient storage")
	}
	return c.Cards.Put(ctx, digest, raw)
}

// A task pinned on the card the worker fetched names a body that is stored:
// when the store refuses the body, the submission is retried (not pinned on
// a digest no later transition could find — that would judge the task's
// next drift pinned-card-unknown, and replay could not re-evaluate it), and
// once the store takes it the pin is made and its body is there. Before,
// a body put that failed (a store refusing writes, or slower than the
// fetcher's StoreTimeout) was ignored and the task pinned anyway.
func TestPinNamesAStoredBody(t *testing.T) {
	cards := &refusingCards{}
	cards.refusals.Store(2)
	r := newRig(t, func(o *worker.Options) {
		cards.Cards = o.Cards
		o.Cards = cards
	})
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	ctx := context.Background()
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "stored", AgentURL: agent.URL(), SkillID: "summarize"}))
	r.Out().WaitFor(t, "the task's card.pinned", func(c *servicetest.Collector) bool {
		return len(c.Events(events.TypePinned, "stored")) > 0
	})
	pinned := r.Out().Events(events.TypePinned, "stored")[0].Data.(events.Pinned)
	if cards.refusals.Load() > 1 {
		t.Fatal("the store refused no put: the test did not exercise a refusal")
	}
	if _, err := r.Stores.Cards.Get(ctx, pinned.Digest); err != nil {
		t.Errorf("body of the pinned digest %s: %v, want it stored", pinned.Digest, err)
	}
}

// TestSplitBrain drives a streaming task through capability-dependent
// transitions while its agent serves the write-up's two cards in turn. The
// agent answers no-cache, so every transition is one fetch, shared by two
// workers through the lease: an alternation (A→B→A→B) publishes one
// card.inconsistent and, while it lasts, card.drift carries
// replicas-disagree; a rolling deploy (A→B, never back) and a single flip
// and back publish none.
func TestSplitBrain(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1", "w2"}})
	ctx := context.Background()
	a, b := servicetest.WriteupT0, servicetest.WriteupT40
	run := func(t *testing.T, task string, agent *servicetest.Agent, seq []string) {
		t.Helper()
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: agent.Served(a)}))
		r.Eventually("the pin", func() bool { return len(r.Out().Events(events.TypePinned, task)) == 1 })
		for _, card := range seq {
			agent.Set(card)
			before := agent.Requests()
			must(t, r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
			r.Eventually("the transition's fetch and verdict", func() bool { return agent.Requests() > before })
			r.Drained(t, servicetest.WaitTimeout)
		}
	}
	inconsistent := func(agent *servicetest.Agent) []events.Inconsistent {
		var out []events.Inconsistent
		for _, ev := range r.Out().All(events.TypeInconsistent) {
			if d := ev.Data.(events.Inconsistent); d.AgentURL == agent.URL() {
				out = append(out, d)
			}
		}
		return out
	}
	carries := func(d events.Drift) bool {
		return slices.ContainsFunc(d.Findings, func(f detector.Finding) bool { return f.Rule == detector.RuleReplicasDisagree })
	}

	t.Run("alternation is split brain", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "split", agent, []string{b, a, b, a, b})
		r.Out().WaitFor(t, "one card.inconsistent", func(c *servicetest.Collector) bool { return len(inconsistent(agent)) == 1 })
		got := inconsistent(agent)[0]
		if len(got.Digests) != 2 || got.Window != events.Duration(2*60e9) || got.CardURL != agent.URL()+"/.well-known/agent-card.json" {
			t.Errorf("card.inconsistent = %+v", got)
		}
		drifts := r.Out().Drifts("split")
		if len(drifts) != 2 || carries(drifts[0]) || !carries(drifts[1]) {
			t.Fatalf("card.drift = %d, want the first without replicas-disagree and one with it once the episode began: %+v", len(drifts), drifts)
		}
		if drifts[1].Verdict.Action != detector.Abort {
			t.Errorf("a warning changed the verdict: %+v", drifts[1].Verdict)
		}

		// Restarts and crashes: other workers carry on, the episode is
		// reported already; a worker that published but crashed before
		// marking it publishes the same event again, which the stream drops.
		lease, rev, err := r.Stores.Leases.Get(ctx, got.CardURL)
		must(t, err)
		if !lease.Replicas.Reported {
			t.Fatalf("episode not marked on the lease: %+v", lease.Replicas)
		}
		lease.Replicas.Reported = false
		_, err = r.Stores.Leases.Update(ctx, lease, rev)
		must(t, err)
		stop := r.StartWorker("w3", nil)
		run(t, "split-2", agent, []string{a, b})
		stop()
		dup := published(t, r.Metrics, events.TypeInconsistent, "duplicate")
		if n := len(inconsistent(agent)); n != 1 || dup < 1 {
			t.Errorf("after a restart and a lost mark: %d card.inconsistent in the stream (%v duplicates dropped), want 1", n, dup)
		}
	})
	t.Run("rolling deploy is not", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "rolling", agent, []string{a, a, b, b, b})
		drifts := r.Out().Drifts("rolling")
		if len(drifts) != 1 || carries(drifts[0]) {
			t.Errorf("card.drift = %+v, want one without replicas-disagree", drifts)
		}
		if n := len(inconsistent(agent)); n != 0 {
			t.Errorf("%d card.inconsistent for a rolling deploy", n)
		}
	})
	t.Run("single flip and back is not", func(t *testing.T) {
		agent := servicetest.NewAgent(t, a)
		run(t, "flip", agent, []string{a, b, b, a, a})
		if n := len(inconsistent(agent)); n != 0 {
			t.Errorf("%d card.inconsistent for a single flip", n)
		}
		if drifts := r.Out().Drifts("flip"); len(drifts) != 1 || carries(drifts[0]) {
			t.Errorf("card.drift = %+v, want one without replicas-disagree", drifts)
		}
	})
}

// published reads carddrift_published_total{type,result}.
func published(t *testing.T, m *worker.Metrics, typ, result string) float64 {
	var v dto.Metric
	if err := m.Published.WithLabelValues(typ, result).Write(&v); err != nil {
		t.Fatal(err)
	}
	return v.GetCounter().GetValue()
}
