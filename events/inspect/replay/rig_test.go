package replay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// rig is the servicetest rig with one worker and an agent whose card (or
// status) the test swaps.
type rig struct {
	*servicetest.Rig
	agent *servicetest.Agent
}

func newRig(t *testing.T, card string) *rig {
	t.Helper()
	return &rig{
		Rig:   servicetest.Start(t, servicetest.Options{Source: "urn:client:replay-test", Workers: []string{"replay-test-worker"}}),
		agent: servicetest.NewAgent(t, card),
	}
}

func (r *rig) reader() *replay.Reader {
	r.T.Helper()
	rd, err := replay.New(r.JS, replay.Options{Config: r.Config, Cards: r.Stores.Cards, IdleTimeout: 5 * time.Second})
	if err != nil {
		r.T.Fatal(err)
	}
	return rd
}

// waitCardEvents waits until at least n events of type typ are stored.
func (r *rig) waitCardEvents(typ string, n int) {
	r.T.Helper()
	r.Out().WaitFor(r.T, fmt.Sprintf("%d %s events", n, typ), func(c *servicetest.Collector) bool { return len(c.All(typ)) >= n })
}

// Two versions of one card: v2 turns streaming off (and bumps the version).
const (
	cardV1 = `{"name":"B","version":"1.0.0","protocolVersion":"0.3.0","url":"https://b.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
	cardV2 = `{"name":"B","version":"1.1.0","protocolVersion":"0.3.0","url":"https://b.example.com/a2a","capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
)

func digest(t *testing.T, card string) string {
	t.Helper()
	d, err := detector.Digest([]byte(card))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rigTask is one task the history drives.
type rigTask struct {
	id         string
	posture    detector.Posture
	idempotent bool
	streaming  bool
	want       detector.Action // the verdict carddrift emits
}

var tasks = []rigTask{
	{id: "fc-idem", posture: detector.FailClosed, idempotent: true, streaming: true, want: detector.Abort},
	{id: "fc-once", posture: detector.FailClosed, streaming: true, want: detector.Abort},
	{id: "deg-idem", posture: detector.Degrade, idempotent: true, streaming: true, want: detector.Replan},
	{id: "no-stream", posture: detector.FailClosed, want: detector.Continue},
}

// record drives a history through the real worker: every task is submitted
// with card v1 and sends a plain request; the agent switches to v2; every
// task then sends a capability-dependent request (a verdict each); fc-idem
// fails; the agent goes down and no-stream resubscribes (unreachable).
func (r *rig) record() {
	r.T.Helper()
	ctx := context.Background()
	url := r.agent.URL()
	must := func(err error) {
		r.T.Helper()
		if err != nil {
			r.T.Fatal(err)
		}
	}
	for _, tk := range tasks {
		must(r.Emit.Submitted(ctx, events.Submitted{
			TaskID: tk.id, AgentURL: url, SkillID: "summarize",
			Requires: events.Requires{Streaming: tk.streaming}, Posture: tk.posture, Idempotent: tk.idempotent,
			Card: []byte(cardV1),
		}))
		must(r.Emit.Request(ctx, events.Request{TaskID: tk.id, AgentURL: url, Method: "message/send", Attempt: 1}))
	}
	r.waitCardEvents(events.TypePinned, len(tasks))
	r.agent.Set(cardV2)
	for _, tk := range tasks {
		must(r.Emit.Request(ctx, events.Request{TaskID: tk.id, AgentURL: url, Method: "message/stream", Attempt: 1}))
	}
	r.waitCardEvents(events.TypeDrift, len(tasks))
	must(r.Emit.Status(ctx, events.Status{TaskID: "fc-idem", AgentURL: url, State: "failed"}))
	r.agent.SetStatus(503)
	must(r.Emit.Request(ctx, events.Request{TaskID: "no-stream", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	r.waitCardEvents(events.TypeUnreachable, 1)
}

// change is a task whose verdict a re-evaluation changes.
type change struct {
	task     string
	old, new detector.Action
}

// reevaluate re-evaluates the whole history under re, requires all n tasks
// evaluated and none skipped, and returns the report and its changes by
// task.
func reevaluate(t *testing.T, rd *replay.Reader, re replay.Reevaluation, n int) (*replay.Report, []change) {
	t.Helper()
	rep, err := rd.Reevaluate(context.Background(), replay.Query{}, re)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Evaluated != n || len(rep.Skipped) != 0 {
		t.Fatalf("evaluated %d, skipped %+v; want %d, none", rep.Evaluated, rep.Skipped, n)
	}
	var out []change
	for _, d := range rep.Differences {
		out = append(out, change{d.TaskID, d.Old.Action, d.New.Action})
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.task, b.task) })
	return rep, out
}
