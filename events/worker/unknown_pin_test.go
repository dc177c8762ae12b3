package worker_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
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
