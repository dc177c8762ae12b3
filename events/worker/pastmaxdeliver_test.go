package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// deliveredMsg is a lifecycle event delivered for the n-th time, by hand:
// it records how the worker settled it.
type deliveredMsg struct {
	jetstream.Msg // nil: what the worker must not call panics
	msg           *nats.Msg
	n             uint64
	settled       string
}

func (m *deliveredMsg) Data() []byte         { return m.msg.Data }
func (m *deliveredMsg) Headers() nats.Header { return m.msg.Header }
func (m *deliveredMsg) Subject() string      { return m.msg.Subject }
func (m *deliveredMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Stream: "A2A_TASKS", Sequence: jetstream.SequencePair{Stream: 7, Consumer: m.n},
		NumDelivered: m.n, Timestamp: time.Now()}, nil
}
func (m *deliveredMsg) Ack() error                         { m.settled = "ack"; return nil }
func (m *deliveredMsg) Nak() error                         { m.settled = "nak"; return nil }
func (m *deliveredMsg) NakWithDelay(time.Duration) error   { m.settled = "nak"; return nil }
func (m *deliveredMsg) InProgress() error                  { return nil }
func (m *deliveredMsg) Term() error                        { m.settled = "term"; return nil }
func (m *deliveredMsg) TermWithReason(reason string) error { m.settled = "term " + reason; return nil }

// An event delivered more often than MaxDeliver was to be dead-lettered on
// its MaxDeliver-th delivery: that dead letter failed, or handling it ended
// the process. The consumer redelivers without limit, so the worker
// dead-letters it without handling it again — an event that crashes every
// worker that handles it would otherwise crash them forever. On its
// MaxDeliver-th delivery it is still handled (here: its task has no pin,
// so it is acknowledged as no-pin).
func TestPastMaxDeliverIsNotHandled(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) { c.MaxDeliver = 3 }})
	w := r.NewWorker("past-max-deliver", nil)
	ev := events.Event{ID: "e1", Source: "urn:test", Data: events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}}
	m, err := events.Encode(ev, events.Binary)
	if err != nil {
		t.Fatal(err)
	}
	m.Subject = "a2a.task.request.t1"
	ctx := context.Background()

	at := &deliveredMsg{msg: m, n: 3}
	worker.Process(ctx, w, at, ev)
	if at.settled != "ack" {
		t.Errorf("delivery 3 of MaxDeliver 3: settled %q, want ack (handled: no pin)", at.settled)
	}
	past := &deliveredMsg{msg: m, n: 4}
	worker.Process(ctx, w, past, ev)
	if past.settled != "term "+string(worker.ReasonMaxDeliver) {
		t.Fatalf("delivery 4 of MaxDeliver 3: settled %q, want dead-lettered (%s) without handling", past.settled, worker.ReasonMaxDeliver)
	}
	s, err := r.JS.Stream(ctx, r.Config.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := s.GetLastMsgForSubject(ctx, r.Config.DLQSubjects)
	if err != nil {
		t.Fatalf("the dead letter: %v", err)
	}
	if got := dl.Header.Get(worker.HeaderDeadLetterReason); got != string(worker.ReasonMaxDeliver) {
		t.Errorf("dead letter reason %q, want %s", got, worker.ReasonMaxDeliver)
	}
}
