package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// No lifecycle event is lost when a worker dies mid-stream. The dying worker
// was handling a slow event (a submission whose digest check fetches a slow
// agent) and had sent InProgress for it, so that event's ack deadline is later
// than those of the events buffered behind it. JetStream redelivers expired
// messages in the order their deadlines pass: the buffered requests reach the
// next worker before the submission that precedes them in the stream. The
// worker must wait for the submission (a task with no pin is NAKed for a
// grace period, events/worker noPinGrace) instead of acknowledging the
// requests as no-pin. (Found as a bug: they were acknowledged and lost.)
func TestRedeliveryReorderKeepsTransitions(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()

	// The agent answers its first request slowly (the first worker's
	// digest check, during which it dies), then serves T0 once more (the
	// second worker's digest check) and T+40s from then on.
	var n atomic.Int64
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/.well-known/agent-card.json" {
			http.NotFound(w, req)
			return
		}
		i := n.Add(1)
		if i == 1 {
			select {
			case <-time.After(2 * time.Second):
			case <-req.Context().Done():
				return
			}
		}
		card := writeupT0
		if i > 2 {
			card = writeupT40
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprint(w, strings.ReplaceAll(card, "AGENT", base))
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	digest, err := detector.Digest([]byte(strings.ReplaceAll(writeupT0, "AGENT", base)))
	if err != nil {
		t.Fatal(err)
	}

	// Both events are published before the first worker pulls, so it
	// receives both: the submission into its handler, the request into its
	// buffer.
	ctx := context.Background()
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "reorder", AgentURL: base, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed, CardDigest: digest}))
	for range 20 {
		must(t, r.emit.Request(ctx, events.Request{TaskID: "reorder", AgentURL: base, Method: "tasks/sendSubscribe", Attempt: 1}))
	}
	// Acknowledgements travel on core NATS subjects: the test hears w1's
	// InProgress ("+WPI") for the submission as the server does.
	acks, err := r.nc.SubscribeSync("$JS.ACK.>")
	if err != nil {
		t.Fatal(err)
	}
	nc1, stop1 := r.startWorkerOn(t, r.nc.ConnectedUrl(), "w1", nil)
	eventually(t, time.Minute, "w1's digest check", func() bool { return n.Load() == 1 })
	// w1's keepAlive sends InProgress for the submission (every AckWait/3)
	// while the digest check runs: its redelivery deadline is then later
	// than the buffered requests', so they are redelivered first.
	for deadline := time.Now().Add(time.Minute); ; {
		m, err := acks.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("waiting for w1's InProgress on the submission: %v", err)
		}
		if string(m.Data) == "+WPI" {
			break
		}
	}
	_ = acks.Unsubscribe()
	nc1.Close() // w1 dies holding the submission (in its handler) and the request (buffered)
	stop1()

	m := worker.NewMetrics(nil)
	r.startWorkerOn(t, r.nc.ConnectedUrl(), "w2", func(o *worker.Options) { o.Metrics = m })
	out.waitFor(t, "the pin", func(o *outbound) bool { return countBy(o, events.TypePinned)["reorder"] == 1 })
	r.drained(t, 15*time.Second)
	out.CaughtUp(t)
	// In stream order: pinned on T0 (digest verified), then the streaming
	// request meets T+40s: abort on streaming-disabled.
	if noPin := m.Events.WithLabelValues(events.TypeRequest, "no-pin"); counterValue(noPin) > 0 {
		t.Errorf("w2 acknowledged %v of the task's 20 requests as no-pin: they reached it before the submission that precedes them in the stream", counterValue(noPin))
	}
	if ds := out.drifts("reorder"); len(ds) != 1 || !rulesOf(ds[0])[detector.RuleStreamingDisabled] {
		t.Errorf("card.drift %+v; want one abort on streaming-disabled (agent requests: %d)", ds, n.Load())
	}
}

// unavailablePins refuses to create pins until a time: a pins bucket
// without a leader, as during an election after its leader died.
type unavailablePins struct {
	store.Pins[task.Pin]
	until atomic.Int64 // unix nanos
}

func (p *unavailablePins) Create(ctx context.Context, pin task.Pin) (uint64, error) {
	if time.Now().UnixNano() < p.until.Load() {
		return 0, errors.New("pins bucket has no leader")
	}
	return p.Pins.Create(ctx, pin)
}

// No transition is lost while its submission cannot be stored for longer
// than the no-pin grace (the cluster's leader-loss test found it: a pins
// bucket electing a leader for 10s, a submission redelivered with a growing
// delay, its task's transitions acknowledged as no-pin meanwhile). While the
// lifecycle stream holds the task's submission before a transition, the
// transition waits for its pin.
func TestSubmissionOutageKeepsTransitions(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()
	k := newKillWorkload(t, 2, 2, "outage-%d-%d")
	m := worker.NewMetrics(nil)
	pins := &unavailablePins{}
	pins.until.Store(time.Now().Add(3 * time.Minute).UnixNano()) // until the workload is published
	r.startWorker("w1", func(o *worker.Options) {
		pins.Pins, o.Pins, o.Metrics = o.Pins, pins, m
	})
	k.publish(t, r.emit)
	// The submissions fail for twice the grace (2×AckWait + PinnedTTL).
	pins.until.Store(time.Now().Add(2 * (2*r.cfg.AckWait + 2*time.Second)).UnixNano())
	eventually(t, 2*time.Minute, "every task's pin and two drifts", func() bool { return k.done(out) })
	if noPin := counterValue(m.Events.WithLabelValues(events.TypeRequest, "no-pin")); noPin > 0 {
		t.Errorf("%v requests acknowledged as no-pin while their submissions waited for the pins bucket", noPin)
	}
	k.check(t, r, out)
}

// A transition of a task that was never submitted is no-pin once its grace
// is over: the lifecycle stream holds no submission of the task, so it does
// not wait on (a few redeliveries, not MaxDeliver's).
func TestNeverSubmittedIsNoPin(t *testing.T) {
	r := newRig(t, testConfig())
	m := worker.NewMetrics(nil)
	r.startWorker("w1", func(o *worker.Options) { o.Metrics = m })
	must(t, r.emit.Request(t.Context(), events.Request{TaskID: "never-submitted", AgentURL: "http://127.0.0.1:9", Method: "tasks/sendSubscribe", Attempt: 1}))
	eventually(t, time.Minute, "the request acknowledged as no-pin", func() bool {
		return counterValue(m.Events.WithLabelValues(events.TypeRequest, "no-pin")) == 1
	})
	if waits := counterValue(m.Events.WithLabelValues(events.TypeRequest, "waiting")); waits > 3 {
		t.Errorf("the request waited %v times for a submission the stream does not hold", waits)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		return -1
	}
	return d.GetCounter().GetValue()
}
