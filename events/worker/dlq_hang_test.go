package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
)

// TestDeadLetterHangHoldsBackNoOtherTask: the dead-letter stream does not
// answer (its subjects reach a subscriber that never replies, as a stream
// without a leader would), and a publisher puts malformed events in a
// task's partition ahead of that task's transition. The transition gets its
// verdict before the first dead-letter publish has even timed out: the
// dead-letter attempts do not run one after the other in the partition's
// consume callback, 5 s each, in front of every other task.
func TestDeadLetterHangHoldsBackNoOtherTask(t *testing.T) {
	var logs servicetest.Output
	r := newRig(t, func(o *worker.Options) { o.Logger = zerolog.New(&logs) })
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT0)
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "ok", AgentURL: agent.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Card: agent.Served(servicetest.WriteupT0)}))
	r.Eventually("the pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == 1 })

	// The dead-letter stream goes away; a silent subscriber takes its
	// subjects, so that every dead-letter publish waits for its timeout.
	if err := r.JS.DeleteStream(ctx, r.Config.DLQStream); err != nil {
		t.Fatal(err)
	}
	silent, err := r.Conn.Subscribe(r.Config.DLQSubjects, func(*nats.Msg) {})
	must(t, err)
	t.Cleanup(func() { silent.Unsubscribe() })
	must(t, r.Conn.Flush())

	// Malformed events on the task's own subject (its partition), then the
	// task's transition, which the changed card makes breaking.
	const poison = 4
	for i := range poison {
		m := nats.NewMsg(events.TypeStatus + "." + events.Token("ok"))
		m.Data = []byte("not a cloudevent " + string(rune('a'+i)))
		if _, err := r.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	agent.Set(servicetest.WriteupT40)
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ok", AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))

	const failed = "dead-letter publish failed"
	r.Eventually("the task's verdict", func() bool { return len(r.Out().Events(events.TypeDrift, "ok")) > 0 })
	if n := strings.Count(logs.String(), failed); n > 0 {
		t.Fatalf("the verdict came after %d dead-letter publish(es) of the malformed events ahead of it had timed out: the partition waited for them", n)
	}
	r.Eventually("the dead-letter attempts failing", func() bool { return strings.Count(logs.String(), failed) >= 1 })
}
