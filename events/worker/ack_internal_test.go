package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// TestAcknowledge: a handled event is acknowledged, with the handler's
// outcome, and a failed acknowledgement is logged; a failure is not
// acknowledged, and passes through.
func TestAcknowledge(t *testing.T) {
	js, cfg := provisioned(t)
	cases := []struct {
		name    string
		acked   bool // acknowledged before: the ack fails
		h       *results
		want    []string
		outcome string
		err     error
		logged  bool
	}{
		{"handled", false, handled(task.OutcomeDrift, nil), []string{"ack"}, task.OutcomeDrift, nil, false},
		{"handled, the ack fails", true, handled(task.OutcomeUnchanged, nil), []string{"ack", "ack"}, task.OutcomeUnchanged, nil, true},
		{"failed", false, handled("", errStore), nil, "", errStore, false},
		{"waiting", false, handled("", waitError{}), nil, "", waitError{}, false},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.acked {
				if err := msgs[i].Ack(); err != nil {
					t.Fatal(err)
				}
			}
			var logs strings.Builder
			outcome, err := acknowledge(&acker{log: zerolog.New(&logs)})(c.h.handle)(context.Background(), deliveryOf(msgs[i], 1))
			if outcome != c.outcome || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Errorf("acknowledge = %q, %v; want %q, %v", outcome, err, c.outcome, c.err)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
			if got := strings.Contains(logs.String(), "ack failed"); got != c.logged {
				t.Errorf("logged a failed ack: %v, want %v (%s)", got, c.logged, logs.String())
			}
		})
	}
}

// TestAcker: the acker acknowledges an event once the card event it waits
// for is stored, NAKs (for redelivery) one whose publish failed, and
// acknowledges one that waits for nothing; a drain settles all it holds.
func TestAcker(t *testing.T) {
	js, cfg := provisioned(t)
	msgs := lifecycleMsgs(t, js, cfg, 3)
	stored, err := js.PublishMsgAsync(&nats.Msg{Subject: "card.pinned.agent.t1", Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := js.PublishMsgAsync(&nats.Msg{Subject: "no-stream.t1", Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	a := &acker{log: zerolog.Nop(), m: m, timeout: 5 * time.Second, in: make(chan pendingAck, ackBuffer)}
	drain, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		a.run(drain, nil)
	}()
	a.ack(msgs[0], []published{{typ: events.TypePinned, ack: stored}})
	a.ack(msgs[1], []published{{typ: events.TypePinned, ack: failed}})
	a.ack(msgs[2], nil)
	close(drain)
	<-done
	for i, want := range [][]string{{"ack"}, {"nak 1s"}, {"ack"}} {
		if got := msgs[i].log(); !slices.Equal(got, want) {
			t.Errorf("message %d: calls = %q, want %q", i, got, want)
		}
	}
	for result, want := range map[string]float64{"published": 1, "error": 1} {
		var d dto.Metric
		if err := m.Published.WithLabelValues(events.TypePinned, result).Write(&d); err != nil {
			t.Fatal(err)
		}
		if got := d.GetCounter().GetValue(); got != want {
			t.Errorf("published %s = %v, want %v", result, got, want)
		}
	}
}

// TestKeepAlive: a kept-alive event is reported in progress every third of
// AckWait until it is stopped, or until the dispatcher abandons its work;
// then no more. (Another event kept alive throughout shows the time that
// passed: three more of its reports, at least two periods.)
func TestKeepAlive(t *testing.T) {
	js, cfg := provisioned(t)
	cases := []struct {
		name string
		end  func(w *Worker, stop func())
	}{
		{"stopped", func(_ *Worker, stop func()) { stop() }},
		{"abandoned", func(w *Worker, _ func()) { w.dispatch.abandon() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := lifecycleMsgs(t, js, cfg, 2)
			kept, clock := msgs[0], msgs[1]
			fast := cfg
			fast.AckWait = 150 * time.Millisecond
			w := &Worker{cfg: fast, dispatch: newDispatcher(1)}
			stop := w.keepAlive(kept)
			other := &Worker{cfg: w.cfg, dispatch: newDispatcher(1)}
			defer other.keepAlive(clock)()
			natstest.Eventually(t, 10*time.Second, "two reports in progress", func() bool { return kept.inProgress() >= 2 })
			c.end(w, stop)
			n, from := kept.inProgress(), clock.inProgress()
			natstest.Eventually(t, 10*time.Second, "three periods", func() bool { return clock.inProgress() >= from+3 })
			if got := kept.inProgress(); got > n+1 {
				t.Fatalf("%d reports in progress after it ended (%d before), want at most one in flight", got-n, n)
			}
		})
	}
}

// TestInProgress: the keepAlive ends once, when the handling returns,
// failed or not, and before anything settles the event.
func TestInProgress(t *testing.T) {
	js, cfg := provisioned(t)
	cases := []struct {
		name string
		h    *results
		want []string
	}{
		{"handled", handled(task.OutcomeDrift, nil), []string{"handled", "stop", "ack"}},
		{"failed", handled("", errStore), []string{"handled", "stop"}},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := deliveryOf(msgs[i], 1)
			h := func(ctx context.Context, d *delivered) (string, error) {
				msgs[i].record("handled")
				return c.h.handle(ctx, d)
			}
			acknowledge(&acker{})(inProgress(h))(context.Background(), d)
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("calls = %q, want %q", got, c.want)
			}
		})
	}
}

// TestRedeliver: any failure that reaches redeliver is NAKed with the
// growing delay of redelivery (2 s on a first delivery), logged and counted
// as retry; a settled event passes through untouched. Nothing leaves it
// with an error.
func TestRedeliver(t *testing.T) {
	js, cfg := provisioned(t)
	nak := "nak " + (2 * time.Second).String()
	cases := []struct {
		name    string
		h       *results
		want    []string
		outcome string
		logged  bool
	}{
		{"transient", handled("", errStore), []string{nak}, outcomeRetry, true},
		{"unclassified", handled("", errOther), []string{nak}, outcomeRetry, true},
		{"permanent (not dead-lettered inside)", handled("", errCorrupt), []string{nak}, outcomeRetry, true},
		{"settled inside", handled(task.OutcomeDrift, nil), nil, task.OutcomeDrift, false},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs strings.Builder
			outcome, err := redeliver(zerolog.New(&logs))(c.h.handle)(context.Background(), deliveryOf(msgs[i], 1))
			if outcome != c.outcome || err != nil {
				t.Errorf("redeliver = %q, %v; want %q, nil", outcome, err, c.outcome)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
			if got := strings.Contains(logs.String(), "event failed; will retry"); got != c.logged {
				t.Errorf("logged the failure: %v, want %v (%s)", got, c.logged, logs.String())
			}
		})
	}
}

// errNoSpace is a write still refused for lack of space when the handling
// ended (noSpace's error).
var errNoSpace = noSpaceError{reason: "server storage full", err: errFull}

// stageCase is one delivery through a handling stage: the handler's
// result h on the delivered-th delivery under maxDeliver; want are the
// calls the stage makes on the message, outcome and err what it returns.
type stageCase struct {
	name       string
	maxDeliver int
	delivered  uint64
	h          *results
	want       []string
	outcome    string
	err        error
}

// run passes the case's delivery of msg through stage, named name in
// errors, and checks what it returns and the calls it made on msg.
func (c stageCase) run(t *testing.T, name string, stage middleware, msg *recordedMsg) {
	t.Helper()
	outcome, err := stage(c.h.handle)(context.Background(), deliveryOf(msg, c.delivered))
	if outcome != c.outcome || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
		t.Errorf("%s = %q, %v; want %q, %v", name, outcome, err, c.outcome, c.err)
	}
	if got := msg.log(); !slices.Equal(got, c.want) {
		t.Errorf("message calls = %q, want %q", got, c.want)
	}
}

// TestPoison: a permanent failure is dead-lettered with its reason on any
// delivery, any other failure with max-deliver on the MaxDeliver-th
// delivery or a later one; the event is terminated after its copy is
// stored (read back here), and counted dead-letter. Other failures pass on
// to redeliver, settled events through.
func TestPoison(t *testing.T) {
	_, js, cfg, dlq := startDLQ(t)
	cases := []struct {
		stageCase
		reason DeadLetterReason
		cause  error
	}{
		{stageCase{"permanent, first delivery", 10, 1, handled("", errCorrupt), []string{"term corrupt-card"}, outcomeDeadLetter, nil}, ReasonCorruptCard, errCorrupt},
		{stageCase{"permanent, MaxDeliver unlimited", -1, 1, handled("", permanentError{reason: ReasonInvalidCard, err: errOther}), []string{"term invalid-card"}, outcomeDeadLetter, nil}, ReasonInvalidCard, permanentError{reason: ReasonInvalidCard, err: errOther}},
		{stageCase{"transient, the MaxDeliver-th delivery", 10, 10, handled("", errStore), []string{"term max-deliver"}, outcomeDeadLetter, nil}, ReasonMaxDeliver, errStore},
		{stageCase{"unclassified, past MaxDeliver", 10, 12, handled("", errOther), []string{"term max-deliver"}, outcomeDeadLetter, nil}, ReasonMaxDeliver, errOther},
		{stageCase{"no space, the MaxDeliver-th delivery: not a dead letter", 10, 10, handled("", errNoSpace), nil, "", errNoSpace}, "", nil},
		{stageCase{"no space, past MaxDeliver: not a dead letter", 10, 12, handled("", errNoSpace), nil, "", errNoSpace}, "", nil},
		{stageCase{"transient, the delivery before", 10, 9, handled("", errStore), nil, "", errStore}, "", nil},
		{stageCase{"transient, MaxDeliver unlimited", -1, 1000, handled("", errStore), nil, "", errStore}, "", nil},
		{stageCase{"handled", 10, 10, handled(task.OutcomeDrift, nil), nil, task.OutcomeDrift, nil}, "", nil},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	w := &Worker{js: js, cfg: cfg, log: zerolog.Nop()}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, "poison", poison(c.maxDeliver, w.deadLetterOutcome), msgs[i])
			if c.reason == "" {
				return
			}
			dl, err := dlq.GetLastMsgForSubject(context.Background(), "carddrift.dlq."+string(c.reason))
			if err != nil {
				t.Fatalf("the dead letter: %v", err)
			}
			if got, want := dl.Header.Get(HeaderStreamSequence), fmt.Sprint(mustMeta(t, msgs[i]).Sequence.Stream); got != want {
				t.Errorf("dead letter of stream sequence %s, want %s", got, want)
			}
			if got := dl.Header.Get(HeaderError); got != c.cause.Error() {
				t.Errorf("dead letter's %s = %q, want %q", HeaderError, got, c.cause.Error())
			}
		})
	}
}

// TestPoisonWithoutDeadLetterStream: when the copy cannot be stored the
// event is not terminated but NAKed with the growing delay, and counted
// retry: no dead-letter outage loses it.
func TestPoisonWithoutDeadLetterStream(t *testing.T) {
	_, js, cfg, _ := startDLQ(t)
	msg := lifecycleMsgs(t, js, cfg, 1)[0]
	if err := js.DeleteStream(context.Background(), cfg.DLQStream); err != nil {
		t.Fatal(err)
	}
	w := &Worker{js: js, cfg: cfg, log: zerolog.Nop()}
	outcome, err := poison(10, w.deadLetterOutcome)(handled("", errCorrupt).handle)(context.Background(), deliveryOf(msg, 1))
	if outcome != outcomeRetry || err != nil {
		t.Errorf("poison = %q, %v; want %q, nil", outcome, err, outcomeRetry)
	}
	if got, want := msg.log(), []string{"nak 2s"}; !slices.Equal(got, want) {
		t.Errorf("message calls = %q, want %q", got, want)
	}
}

// TestPastMaxDeliver: a delivery past MaxDeliver is not handled; it fails
// with errPastMaxDeliver and how often it was delivered. The MaxDeliver-th
// is handled, and so is every delivery without a limit or a count.
func TestPastMaxDeliver(t *testing.T) {
	cases := []struct {
		name       string
		maxDeliver int
		delivered  uint64
		handled    bool
	}{
		{"first delivery", 3, 1, true},
		{"the MaxDeliver-th", 3, 3, true},
		{"one past", 3, 4, false},
		{"far past", 3, 40, false},
		{"MaxDeliver unlimited", -1, 40, true},
		{"count unknown", 3, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := handled(task.OutcomeDrift, nil)
			outcome, err := pastMaxDeliver(c.maxDeliver)(h.handle)(context.Background(), &delivered{at: delivery{delivered: c.delivered}})
			if got := h.calls == 1; got != c.handled {
				t.Fatalf("handled: %v, want %v", got, c.handled)
			}
			if c.handled {
				if outcome != task.OutcomeDrift || err != nil {
					t.Errorf("pastMaxDeliver = %q, %v; want the handler's drift", outcome, err)
				}
				return
			}
			if want := fmt.Sprintf("delivered %d times", c.delivered); !errors.Is(err, errPastMaxDeliver) || !strings.Contains(err.Error(), want) {
				t.Errorf("pastMaxDeliver = %v, want errPastMaxDeliver, %s", err, want)
			}
		})
	}
}

// TestCount: every event leaving the chain is counted once, by type and
// the outcome it leaves with, and its time observed; a nil *Metrics counts
// nothing.
func TestCount(t *testing.T) {
	m := NewMetrics(nil)
	ev := events.Event{Type: events.TypeStatus}
	for _, outcome := range []string{task.OutcomeDrift, task.OutcomeDrift, outcomeRetry} {
		count(m)(handled(outcome, nil).handle)(context.Background(), &delivered{ev: ev})
	}
	for _, c := range []struct {
		outcome string
		want    float64
	}{{task.OutcomeDrift, 2}, {outcomeRetry, 1}, {outcomeDeadLetter, 0}} {
		if got := counted(t, m, events.TypeStatus, c.outcome); got != c.want {
			t.Errorf("carddrift_events_total{%s, %s} = %v, want %v", events.TypeStatus, c.outcome, got, c.want)
		}
	}
	var h dto.Metric
	if err := m.EventTime.WithLabelValues(events.TypeStatus).(interface{ Write(*dto.Metric) error }).Write(&h); err != nil {
		t.Fatal(err)
	}
	if got := h.GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("carddrift_event_duration_seconds{%s} samples = %d, want 3", events.TypeStatus, got)
	}
	if outcome, _ := count(nil)(handled(task.OutcomeDrift, nil).handle)(context.Background(), &delivered{ev: ev}); outcome != task.OutcomeDrift {
		t.Errorf("count(nil) = %q, want the handler's outcome", outcome)
	}
}

// TestAwaitPin: an event that waits for its task's pin is NAKed with the
// wait's delay, and acknowledged as no-pin from the delivery before the
// MaxDeliver-th on (never dead-lettered); anything else passes through.
func TestAwaitPin(t *testing.T) {
	js, cfg := provisioned(t)
	wait := waitError{delay: 4 * time.Second}
	cases := []stageCase{
		{"first delivery", 10, 1, handled("", wait), []string{"nak 4s"}, outcomeWaiting, nil},
		{"two before MaxDeliver", 10, 8, handled("", wait), []string{"nak 4s"}, outcomeWaiting, nil},
		{"the delivery before MaxDeliver", 10, 9, handled("", wait), []string{"ack"}, task.OutcomeNoPin, nil},
		{"the MaxDeliver-th", 10, 10, handled("", wait), []string{"ack"}, task.OutcomeNoPin, nil},
		{"MaxDeliver unlimited", -1, 100, handled("", wait), []string{"nak 4s"}, outcomeWaiting, nil},
		{"MaxDeliver 1", 1, 1, handled("", wait), []string{"ack"}, task.OutcomeNoPin, nil},
		{"handled", 10, 1, handled(task.OutcomeDrift, nil), nil, task.OutcomeDrift, nil},
		{"another failure", 10, 9, handled("", errStore), nil, "", errStore},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, "awaitPin", awaitPin(c.maxDeliver), msgs[i]) })
	}
}

// steeringHeaders are the publish headers nats-server v2.15.2 acts on
// (server/stream.go, msgtrace.go: JS*, MsgTrace*), with values that would
// make a dead-letter stream refuse, drop, expire, roll up or trace the
// copy, and spellings in other cases.
var steeringHeaders = map[string]string{
	"Nats-Msg-Id":                                 "attacker-chosen",
	"Nats-Expected-Stream":                        topology.DefaultLifecycleStream,
	"Nats-Expected-Last-Sequence":                 "999999",
	"Nats-Expected-Last-Subject-Sequence":         "999999",
	"Nats-Expected-Last-Subject-Sequence-Subject": "carddrift.dlq.malformed",
	"Nats-Expected-Last-Msg-Id":                   "nope",
	"Nats-Rollup":                                 "all",
	"Nats-TTL":                                    "1s",
	"Nats-Incr":                                   "+1",
	"Nats-Batch-Id":                               "b1",
	"Nats-Batch-Sequence":                         "1",
	"Nats-Batch-Commit":                           "1",
	"Nats-Schedule":                               "@every 1s",
	"Nats-Schedule-Target":                        "carddrift.dlq.x",
	"Nats-Schedule-TTL":                           "1s",
	"Nats-Required-Api-Level":                     "999",
	"Nats-Trace-Dest":                             "attacker.trace",
	"Nats-Trace-Only":                             "true",
	"nats-expected-stream":                        "NOPE",
	"Carddrift-Dead-Letter-Reason":                "nothing-to-see",
	"Carddrift-Stream-Sequence":                   "1",
}

// startDLQ starts an embedded JetStream with carddrift's default streams
// provisioned, and returns the connection, its cfg and the dead-letter
// stream.
func startDLQ(t *testing.T) (*nats.Conn, jetstream.JetStream, store.Config, jetstream.Stream) {
	t.Helper()
	_, nc, js := natstest.StartJetStream(t)
	cfg := store.DefaultConfig()
	if err := store.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	dlq, err := js.Stream(context.Background(), cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, cfg, dlq
}

// storedCopy publishes the dead letter m and reads it back from the
// dead-letter stream dlq; both must succeed.
func storedCopy(t *testing.T, js jetstream.JetStream, dlq jetstream.Stream, m *nats.Msg) *jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ack, err := js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatalf("dead-letter publish = %v, want stored", err)
	}
	got, err := dlq.GetMsg(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDeadLetterCopyIsStored publishes the dead-letter copy of events
// carrying each steering header, and all of them at once, to a real
// dead-letter stream: every copy is stored, with the publisher's steering
// headers renamed and its other headers kept, and carddrift's own.
func TestDeadLetterCopyIsStored(t *testing.T) {
	ctx := context.Background()
	nc, js, cfg, dlq := startDLQ(t)
	type tc struct {
		name   string
		header nats.Header
	}
	all := nats.Header{"traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	var cases []tc
	for k, v := range steeringHeaders {
		cases = append(cases, tc{k, nats.Header{k: {v}, "traceparent": all["traceparent"]}})
		all[k] = []string{v}
	}
	cases = append(cases, tc{"all", all})

	// The copy as it was made before (headers copied as they are) is
	// refused: the test exercises a stream that means it.
	raw := nats.NewMsg("carddrift.dlq.malformed")
	raw.Header.Set("Nats-Expected-Stream", topology.DefaultLifecycleStream)
	if _, err := js.PublishMsg(ctx, raw); err == nil {
		t.Fatalf("the dead-letter stream stored a copy that expects stream %s", topology.DefaultLifecycleStream)
	}

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := original{subject: "a2a.task.status.x.1", header: c.header, data: []byte("not a cloudevent"), stream: cfg.LifecycleStream, seq: uint64(100 + i)}
			m := deadLetterMsg("carddrift.dlq.malformed", o, ReasonMalformed, errors.New("boom"), nc.MaxPayload())
			got := storedCopy(t, js, dlq, m)
			for k, vs := range c.header {
				want := k
				if steers(k) {
					want = PublisherHeaderPrefix + k
					if got.Header.Get(k) == vs[0] {
						t.Errorf("copy carries the publisher's %s: %s", k, vs[0])
					}
				}
				if got.Header.Get(want) != vs[0] {
					t.Errorf("copy's %s = %q, want the publisher's %q", want, got.Header.Get(want), vs[0])
				}
			}
			if got.Header.Get(HeaderDeadLetterReason) != string(ReasonMalformed) || got.Header.Get(HeaderOriginalSubject) != o.subject {
				t.Errorf("copy's own headers = %v", got.Header)
			}
			if string(got.Data) != string(o.data) {
				t.Errorf("copy's data = %q", got.Data)
			}
		})
	}
}

// TestDeadLetterCopyFitsMaxPayload: an event of the largest size the
// server takes still has a dead-letter copy the server takes: without the
// publisher's headers when that is enough, else with its data cut and its
// original size recorded.
func TestDeadLetterCopyFitsMaxPayload(t *testing.T) {
	nc, js, cfg, dlq := startDLQ(t)
	maxPayload := nc.MaxPayload()
	steer := nats.Header{"Nats-Expected-Stream": {cfg.LifecycleStream}}
	padded := nats.Header{"X-Padding": {strings.Repeat("p", 8192)}, "Nats-Expected-Stream": {cfg.LifecycleStream}}
	cases := []struct {
		name      string
		header    nats.Header
		truncated bool
	}{
		{"headers dropped", padded, false},
		{"data cut", steer, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(strings.Repeat("d", int(maxPayload-headerSize(c.header))))
			m := deadLetterMsg("carddrift.dlq.malformed", original{subject: "a2a.task.status.x", header: c.header, data: data, stream: cfg.LifecycleStream, seq: uint64(i + 1)},
				ReasonMalformed, errors.New(strings.Repeat("e", 4096)), maxPayload)
			if size := headerSize(m.Header) + int64(len(m.Data)); size > maxPayload {
				t.Fatalf("copy is %d bytes, more than the server's %d", size, maxPayload)
			}
			got := storedCopy(t, js, dlq, m)
			if got.Header.Get(PublisherHeaderPrefix+"Nats-Expected-Stream") != "" || got.Header.Get("X-Padding") != "" {
				t.Errorf("copy kept the publisher's headers: %d bytes of them", headerSize(got.Header))
			}
			if len(got.Header.Get(HeaderError)) > maxErrorHeader {
				t.Errorf("%s is %d bytes", HeaderError, len(got.Header.Get(HeaderError)))
			}
			cut := got.Header.Get(HeaderDataTruncated)
			switch {
			case !c.truncated && (cut != "" || string(got.Data) != string(data)):
				t.Errorf("copy: %d of %d bytes of data, %s %q; want all of it", len(got.Data), len(data), HeaderDataTruncated, cut)
			case c.truncated && (cut != strconv.Itoa(len(data)) || len(got.Data) == 0 || len(got.Data) >= len(data) || !strings.HasPrefix(string(data), string(got.Data))):
				t.Errorf("copy: %d of %d bytes of data, %s %q; want a prefix and the size", len(got.Data), len(data), HeaderDataTruncated, cut)
			}
		})
	}
}

// TestDeadLetterReasons audits the vocabulary: unique, each a literal NATS
// subject token (the last of carddrift.dlq.<reason>).
func TestDeadLetterReasons(t *testing.T) {
	seen := map[DeadLetterReason]bool{}
	for _, r := range DeadLetterReasons() {
		if seen[r] {
			t.Errorf("reason %q listed twice", r)
		}
		seen[r] = true
		if r == "" || strings.ContainsAny(string(r), ".*> \t") || events.Token(string(r)) != string(r) {
			t.Errorf("reason %q is not a plain subject token", r)
		}
	}
	if !seen[ReasonSubjectMismatch] {
		t.Errorf("%s missing from DeadLetterReasons", ReasonSubjectMismatch)
	}

	// The public contract's table (schemas/README.md) lists the same
	// reasons, in order.
	doc, err := os.ReadFile(filepath.Join("..", "..", "schemas", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Dead-letter reasons\n")
	if !ok {
		t.Fatal("schemas/README.md has no section \"### Dead-letter reasons\"")
	}
	var got, want []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if id, ok := strings.CutPrefix(line, "| `"); ok {
			id, _, _ = strings.Cut(id, "`")
			got = append(got, id)
		}
	}
	for _, r := range DeadLetterReasons() {
		want = append(want, string(r))
	}
	if !slices.Equal(got, want) {
		t.Errorf("schemas/README.md's dead-letter reasons = %v\nDeadLetterReasons() = %v", got, want)
	}
}

// TestCheckSubjectShapes: the shapes of a stored lifecycle subject the
// worker accepts, with and without partitions and under another prefix.
func TestCheckSubjectShapes(t *testing.T) {
	ev := events.Event{Type: events.TypeStatus, Data: events.Status{TaskID: "t.1", AgentURL: "https://a.example", State: "working"}}
	tok := events.Token("t.1")
	pinned := events.Event{Type: events.TypePinned, Data: events.Pinned{TaskID: "t.1", AgentURL: "https://a.example"}}
	cases := []struct {
		name       string
		subjects   string
		partitions int
		ev         events.Event
		subject    string
		ok         bool
	}{
		{"unpartitioned", "a2a.task.>", 0, ev, "a2a.task.status." + tok, true},
		{"partitioned", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".3", true},
		{"another prefix", "acme.tasks.>", 2, ev, "acme.tasks.status." + tok + ".1", true},
		{"outbound type: left to the handler", "a2a.task.>", 4, pinned, "a2a.task.pinned.decoy.0", true},
		{"another task", "a2a.task.>", 4, ev, "a2a.task.status.decoy.0", false},
		{"another kind", "a2a.task.>", 4, ev, "a2a.task.error." + tok + ".0", false},
		{"raw id", "a2a.task.>", 0, ev, "a2a.task.status.t.1", false},
		{"no partition token", "a2a.task.>", 4, ev, "a2a.task.status." + tok, false},
		{"the last partition there can be", "a2a.task.>", topology.MaxPartitions, ev, "a2a.task.status." + tok + "." + strconv.Itoa(topology.MaxPartitions-1), true},
		{"beyond the partitions there can be", "a2a.task.>", topology.MaxPartitions, ev, "a2a.task.status." + tok + "." + strconv.Itoa(topology.MaxPartitions), false},
		{"a non-canonical partition", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".01", false},
		{"a token where the partition goes", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".x", false},
		{"extra tokens", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".0.0", false},
		{"outside the prefix", "acme.tasks.>", 0, ev, "a2a.task.status." + tok, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := store.DefaultConfig()
			cfg.LifecycleSubjects, cfg.Partitions = c.subjects, c.partitions
			w := &Worker{cfg: cfg}
			err := w.checkSubject(c.subject, c.ev)
			if c.ok && err != nil {
				t.Fatalf("checkSubject(%q) = %v, want nil", c.subject, err)
			}
			if !c.ok && !errors.Is(err, events.ErrSubjectMismatch) {
				t.Fatalf("checkSubject(%q) = %v, want ErrSubjectMismatch", c.subject, err)
			}
		})
	}
}

// FuzzCheckSubjectShapes feeds stored subjects and task ids to
// checkSubject: it accepts exactly <prefix>.status.<Token(id)>, followed
// by a partition number when the stream is partitioned.
func FuzzCheckSubjectShapes(f *testing.F) {
	f.Add("a2a.task.status.t-1", "t-1", uint8(0))
	f.Add("a2a.task.status.t-1.3", "t-1", uint8(4))
	f.Add("a2a.task.status.t=2E1.0", "t.1", uint8(4))
	f.Add("a2a.task.status.t.1", "t.1", uint8(0))
	f.Add("a2a.task.error.victim.2", "victim", uint8(4))
	f.Add("a2a.task.status.decoy.0.0", "victim", uint8(4))
	f.Fuzz(func(t *testing.T, subject, id string, partitions uint8) {
		cfg := store.DefaultConfig()
		cfg.Partitions = int(partitions % 8)
		w := &Worker{cfg: cfg}
		ev := events.Event{Type: events.TypeStatus, Data: events.Status{TaskID: id, AgentURL: "https://a.example", State: "working"}}
		err := w.checkSubject(subject, ev)
		if err != nil && !errors.Is(err, events.ErrSubjectMismatch) {
			t.Fatalf("checkSubject(%q) = %v", subject, err)
		}
		own := "a2a.task.status." + events.Token(id)
		rest, cut := strings.CutPrefix(subject, own)
		want := cut && (cfg.Partitions == 0 && rest == "" || cfg.Partitions > 0 && strings.HasPrefix(rest, ".") && partitionToken(rest[1:]))
		if (err == nil) != want {
			t.Fatalf("checkSubject(%q) for task %q, %d partitions = %v, want accepted %v", subject, id, cfg.Partitions, err, want)
		}
	})
}

// partitionToken is the fuzz oracle's partition token: a decimal number
// below topology.MaxPartitions.
func partitionToken(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n < topology.MaxPartitions && strconv.Itoa(n) == s
}

// provisioned starts an embedded JetStream server with carddrift's
// default streams and buckets.
func provisioned(t *testing.T) (jetstream.JetStream, store.Config) {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	cfg := store.DefaultConfig()
	if err := store.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	return js, cfg
}

// recordedMsg is a real message, delivered by a JetStream consumer, that
// records in order how the wrappers settle it (and, through its delivered's
// stop, when its keepAlive ends). Every call goes on to the real message.
type recordedMsg struct {
	jetstream.Msg
	mu    sync.Mutex
	calls []string
}

func (m *recordedMsg) record(call string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, call)
}

// log returns the calls so far, in order.
func (m *recordedMsg) log() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// inProgress returns how many InProgress calls it recorded.
func (m *recordedMsg) inProgress() int {
	n := 0
	for _, c := range m.log() {
		if c == "in-progress" {
			n++
		}
	}
	return n
}

func (m *recordedMsg) Ack() error { m.record("ack"); return m.Msg.Ack() }
func (m *recordedMsg) Nak() error { m.record("nak"); return m.Msg.Nak() }
func (m *recordedMsg) NakWithDelay(d time.Duration) error {
	m.record("nak " + d.String())
	return m.Msg.NakWithDelay(d)
}
func (m *recordedMsg) Term() error { m.record("term"); return m.Msg.Term() }
func (m *recordedMsg) TermWithReason(reason string) error {
	m.record("term " + reason)
	return m.Msg.TermWithReason(reason)
}
func (m *recordedMsg) InProgress() error { m.record("in-progress"); return m.Msg.InProgress() }

// lifecycleMsgs publishes n messages to the lifecycle stream of js (as
// store.Provision made it with cfg) and returns them as an explicit-ack
// consumer delivers them, for the first time, each recording.
func lifecycleMsgs(t *testing.T, js jetstream.JetStream, cfg store.Config, n int) []*recordedMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject := "a2a.task.request." + events.Token(t.Name())
	for i := range n {
		if _, err := js.Publish(ctx, subject, fmt.Appendf(nil, "event %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, cfg.LifecycleStream, jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: subject, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*recordedMsg
	for m := range batch.Messages() {
		msgs = append(msgs, &recordedMsg{Msg: m})
	}
	if len(msgs) != n {
		t.Fatalf("fetched %d messages, want %d", len(msgs), n)
	}
	return msgs
}

// deliveryOf is msg on its n-th delivery through the chain, as process
// makes it: a request event of task t1; its stop is recorded.
func deliveryOf(msg *recordedMsg, n uint64) *delivered {
	ev := events.Event{ID: "e1", Type: events.TypeRequest, Source: "urn:test",
		Data: events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}}
	return &delivered{msg: msg, ev: ev, at: delivery{seq: 1, delivered: n, stored: time.Now()}, start: time.Now(),
		stop: func() { msg.record("stop") }}
}

// results is a handler that returns each of its results in turn, one per
// call, and counts its calls.
type results struct {
	rs    []result
	calls int
}

type result struct {
	outcome string
	err     error
}

func (r *results) handle(context.Context, *delivered) (string, error) {
	r.calls++
	if len(r.rs) == 0 {
		panic("handled once more than the case has results")
	}
	res := r.rs[0]
	if len(r.rs) > 1 {
		r.rs = r.rs[1:]
	}
	return res.outcome, res.err
}

// handled returns the same result for every call.
func handled(outcome string, err error) *results { return &results{rs: []result{{outcome, err}}} }

// counted is carddrift_events_total{type, outcome} of m.
func counted(t *testing.T, m *Metrics, typ, outcome string) float64 {
	t.Helper()
	var v dto.Metric
	if err := m.Events.WithLabelValues(typ, outcome).Write(&v); err != nil {
		t.Fatal(err)
	}
	return v.GetCounter().GetValue()
}

var (
	errStore   = transient(errors.New("kv: timeout"))
	errOther   = errors.New("not classified")
	errCorrupt = permanentError{reason: ReasonCorruptCard, err: errors.New("stored body does not parse")}
	// errFull is a publish the server refused for lack of space, as
	// nats.go reports nats-server's JSInsufficientResourcesErr (store.NoSpace
	// is tested on the real one).
	errFull = transient(fmt.Errorf("publish card.drift: %w", &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}))
)

// TestChain: the whole delivery policy, as the worker composes it (chain),
// for every way an event's handling can end — the cases of the one switch
// it replaced. The keepAlive stops before the event is settled, once;
// dead letters are stored before the termination (their reason and error
// are read back from the dead-letter stream); the outcome is counted once.
func TestChain(t *testing.T) {
	_, js, cfg, dlq := startDLQ(t)
	cfg.MaxDeliver = 3
	nak := "nak " + (2 * time.Second).String() // redeliveryDelay on a first delivery
	cases := []struct {
		name       string
		maxDeliver int
		delivered  uint64
		h          *results
		calls      int
		want       []string
		outcome    string
		reason     DeadLetterReason // of the stored dead letter, if any
		cause      string           // what its error header says
		within     time.Duration    // the handling's context ends after this (0: never)
		atLeast    bool             // calls is a lower bound
	}{
		{name: "handled", delivered: 1, h: handled(task.OutcomeDrift, nil), calls: 1,
			want: []string{"stop", "ack"}, outcome: task.OutcomeDrift},
		{name: "transient, then handled", delivered: 1, h: &results{rs: []result{{"", errStore}, {task.OutcomeUnchanged, nil}}}, calls: 2,
			want: []string{"stop", "ack"}, outcome: task.OutcomeUnchanged},
		{name: "transient outlasts the in-process retries", delivered: 1, h: handled("", errStore), calls: 1 + inProcessRetries,
			want: []string{"stop", nak}, outcome: outcomeRetry},
		{name: "transient on the MaxDeliver-th delivery", delivered: 3, h: handled("", errStore), calls: 1 + inProcessRetries,
			want: []string{"stop", "term max-deliver"}, outcome: outcomeDeadLetter, reason: ReasonMaxDeliver, cause: errStore.Error()},
		{name: "transient, MaxDeliver unlimited", maxDeliver: -1, delivered: 50, h: handled("", errStore), calls: 1 + inProcessRetries,
			want: []string{"stop", nak}, outcome: outcomeRetry},
		{name: "unclassified error: not retried in process", delivered: 1, h: handled("", errOther), calls: 1,
			want: []string{"stop", nak}, outcome: outcomeRetry},
		{name: "permanent", delivered: 1, h: handled("", errCorrupt), calls: 1,
			want: []string{"stop", "term corrupt-card"}, outcome: outcomeDeadLetter, reason: ReasonCorruptCard, cause: errCorrupt.Error()},
		{name: "no pin yet", delivered: 1, h: handled("", waitError{delay: 3 * time.Second}), calls: 1,
			want: []string{"stop", "nak 3s"}, outcome: outcomeWaiting},
		{name: "no pin on the delivery before MaxDeliver", delivered: 2, h: handled("", waitError{delay: 3 * time.Second}), calls: 1,
			want: []string{"stop", "ack"}, outcome: task.OutcomeNoPin},
		{name: "no pin on the MaxDeliver-th delivery: not a dead letter", delivered: 3, h: handled("", waitError{delay: 3 * time.Second}), calls: 1,
			want: []string{"stop", "ack"}, outcome: task.OutcomeNoPin},
		{name: "no space, then handled, on the MaxDeliver-th delivery: held, not a dead letter", delivered: 3,
			h: &results{rs: []result{{"", errFull}, {"", errFull}, {task.OutcomeDrift, nil}}}, calls: 3,
			want: []string{"stop", "ack"}, outcome: task.OutcomeDrift},
		{name: "no space until the context ends, on the MaxDeliver-th delivery: NAKed, not a dead letter", delivered: 3,
			h: handled("", errFull), within: 600 * time.Millisecond, calls: 2, atLeast: true,
			want: []string{"stop", nak}, outcome: outcomeRetry},
		{name: "past MaxDeliver: not handled", delivered: 4, h: &results{}, calls: 0,
			want: []string{"stop", "term max-deliver"}, outcome: outcomeDeadLetter, reason: ReasonMaxDeliver,
			cause: fmt.Errorf("%w: delivered 4 times", errPastMaxDeliver).Error()},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ccfg := cfg
			if c.maxDeliver != 0 {
				ccfg.MaxDeliver = c.maxDeliver
			}
			m := NewMetrics(nil)
			w := &Worker{js: js, cfg: ccfg, opts: Options{HandleTimeout: 5 * time.Second}, log: zerolog.Nop(), m: m,
				space: newSpace(zerolog.Nop(), m), acks: &acker{log: zerolog.Nop(), m: m}}
			d := deliveryOf(msgs[i], c.delivered)
			ctx := context.Background()
			if c.within > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.within)
				defer cancel()
			}
			outcome, err := w.chain(c.h.handle)(ctx, d)
			if err != nil || outcome != c.outcome {
				t.Errorf("chain = %q, %v; want %q, nil", outcome, err, c.outcome)
			}
			if c.atLeast && c.h.calls < c.calls {
				t.Errorf("handled %d times, want at least %d", c.h.calls, c.calls)
			} else if !c.atLeast && c.h.calls != c.calls {
				t.Errorf("handled %d times, want %d", c.h.calls, c.calls)
			}
			var held dto.Metric
			if err := m.HeldForSpace.Write(&held); err != nil || held.GetGauge().GetValue() != 0 {
				t.Errorf("carddrift_events_held_for_space = %v (%v) after the handling, want 0", held.GetGauge().GetValue(), err)
			}
			if full := w.NoSpace(); (full != "") != (c.within > 0 && errors.Is(c.h.rs[0].err, errFull)) {
				t.Errorf("NoSpace() = %q after the handling", full)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
			if got := counted(t, w.m, events.TypeRequest, c.outcome); got != 1 {
				t.Errorf("carddrift_events_total{%s, %s} = %v, want 1", events.TypeRequest, c.outcome, got)
			}
			if c.reason == "" {
				return
			}
			dl, err := dlq.GetLastMsgForSubject(context.Background(), "carddrift.dlq."+string(c.reason))
			if err != nil {
				t.Fatalf("the dead letter: %v", err)
			}
			if dl.Header.Get(HeaderStreamSequence) != fmt.Sprint(mustMeta(t, msgs[i]).Sequence.Stream) {
				t.Errorf("the dead letter of stream sequence %s, want this event's", dl.Header.Get(HeaderStreamSequence))
			}
			if got := dl.Header.Get(HeaderError); got != c.cause {
				t.Errorf("dead letter's %s = %q, want %q", HeaderError, got, c.cause)
			}
		})
	}
}

func mustMeta(t *testing.T, m jetstream.Msg) *jetstream.MsgMetadata {
	t.Helper()
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// TestCompose: the first middleware is the outermost.
func TestCompose(t *testing.T) {
	var order []string
	layer := func(name string) middleware {
		return func(h handlerFunc) handlerFunc {
			return func(ctx context.Context, d *delivered) (string, error) {
				order = append(order, name)
				return h(ctx, d)
			}
		}
	}
	h := compose(func(context.Context, *delivered) (string, error) { order = append(order, "handler"); return "", nil },
		layer("outer"), layer("middle"), layer("inner"))
	h(context.Background(), &delivered{})
	if got := strings.Join(order, " "); got != "outer middle inner handler" {
		t.Errorf("compose ran %q, want outer middle inner handler", got)
	}
}

// realMsgs publishes n messages of size bytes to a fresh stream of an
// embedded JetStream and returns them as a pull consumer delivers them.
func realMsgs(t *testing.T, n, size int) []jetstream.Msg {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := js.Publish(ctx, "s.x", []byte(strings.Repeat("x", size))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != n {
		t.Fatalf("fetched %d messages, want %d", len(msgs), n)
	}
	return msgs
}

func TestInflightTakeAndGive(t *testing.T) {
	msgs := realMsgs(t, 3, 1000)
	one := msgSize(msgs[0])
	f := newInflight(2*one, time.Hour)
	ctx := context.Background()
	a, _ := f.take(ctx, msgs[0])
	b, _ := f.take(ctx, msgs[1])
	if got := f.held(); got != 2*one {
		t.Fatalf("held after two takes = %d, want %d", got, 2*one)
	}
	// The third waits until one of the first two is finished.
	taken := make(chan jetstream.Msg)
	go func() {
		m, _ := f.take(ctx, msgs[2])
		taken <- m
	}()
	select {
	case <-taken:
		t.Fatal("a third event was taken while the bound was full")
	case <-time.After(50 * time.Millisecond):
	}
	if err := a.Ack(); err != nil {
		t.Fatal(err)
	}
	c := <-taken
	a.Ack() // twice: gives nothing more back
	if got := f.held(); got != 2*one {
		t.Fatalf("held after an ack and the third take = %d, want %d", got, 2*one)
	}
	b.Nak()
	c.TermWithReason("test")
	if got := f.held(); got != 0 {
		t.Fatalf("held after every event finished = %d, want 0", got)
	}
	// An event larger than the bound takes all of it, alone.
	small := newInflight(one/2, time.Hour)
	m, _ := small.take(ctx, msgs[0])
	if got := small.held(); got != one/2 {
		t.Fatalf("held by an oversize event = %d, want the whole bound %d", got, one/2)
	}
	m.Ack()
	// A take gives up when its context ends.
	full := newInflight(one, time.Hour)
	full.take(ctx, msgs[0])
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := full.take(cctx, msgs[1]); ok {
		t.Fatal("take on a full bound with a cancelled context succeeded")
	}
}

// An event that is never finished gives its bytes back once AckWait has
// passed without InProgress: the server redelivers it then anyway.
func TestInflightAckWaitReturnsBytes(t *testing.T) {
	msgs := realMsgs(t, 1, 100)
	f := newInflight(1<<20, 100*time.Millisecond)
	if _, ok := f.take(context.Background(), msgs[0]); !ok {
		t.Fatal("take failed")
	}
	natstest.Eventually(t, 10*time.Second, "bytes of an unfinished event back after AckWait", func() bool { return f.held() == 0 })
}

// TestRetry: only a transientError is retried in process, at most retries
// more times, with a doubling wait, and not once the context has ended;
// the last result is handed on as it is.
func TestRetry(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	const base = 5 * time.Millisecond
	cases := []struct {
		name  string
		ctx   context.Context
		h     *results
		calls int
		err   error
	}{
		{"handled", context.Background(), handled("drift", nil), 1, nil},
		{"transient twice, then handled", context.Background(), &results{rs: []result{{"", errStore}, {"", errStore}, {"drift", nil}}}, 3, nil},
		{"transient every time", context.Background(), handled("", errStore), 1 + 3, errStore},
		{"permanent", context.Background(), handled("", errCorrupt), 1, errCorrupt},
		{"waiting for the pin", context.Background(), handled("", waitError{delay: time.Second}), 1, waitError{delay: time.Second}},
		{"unclassified", context.Background(), handled("", errOther), 1, errOther},
		{"transient, context ended", canceled, handled("", errStore), 1, errStore},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var at []time.Time
			h := retry(3, base)(func(ctx context.Context, d *delivered) (string, error) {
				at = append(at, time.Now())
				return c.h.handle(ctx, d)
			})
			outcome, err := h(c.ctx, &delivered{})
			if !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Errorf("retry = %q, %v; want error %v", outcome, err, c.err)
			}
			if err == nil && outcome != "drift" {
				t.Errorf("retry = %q, want the handler's drift", outcome)
			}
			if c.h.calls != c.calls {
				t.Errorf("handled %d times, want %d", c.h.calls, c.calls)
			}
			for i := 1; i < len(at); i++ {
				if gap, want := at[i].Sub(at[i-1]), base<<(i-1); gap < want {
					t.Errorf("attempt %d came %v after the one before, want at least %v", i+1, gap, want)
				}
			}
		})
	}
}

// TestRetryStopsWhenTheContextEnds: a shutdown during the backoff ends the
// retries at once, with the last error.
func TestRetryStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := handled("", errStore)
	_, err := retry(3, time.Hour)(func(ctx context.Context, d *delivered) (string, error) {
		defer cancel()
		return h.handle(ctx, d)
	})(ctx, &delivered{})
	if !errors.Is(err, errStore) || h.calls != 1 {
		t.Fatalf("retry with its context ended in the backoff = %v after %d calls, want the transient error after 1", err, h.calls)
	}
}

// TestTimeout: each call of the handler runs under its own deadline, no
// later than the caller's, and its context ends when it returns.
func TestTimeout(t *testing.T) {
	soon, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := []struct {
		name   string
		ctx    context.Context
		d      time.Duration
		within time.Duration // the deadline the handler sees, from now
	}{
		{"its own deadline", context.Background(), time.Hour, time.Hour},
		{"the caller's, when sooner", soon, time.Hour, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var inner context.Context
			start := time.Now()
			timeout(c.d)(func(ctx context.Context, _ *delivered) (string, error) {
				inner = ctx
				return "", nil
			})(c.ctx, &delivered{})
			end := time.Now()
			deadline, ok := inner.Deadline()
			if !ok || deadline.After(end.Add(c.within)) || deadline.Before(start.Add(c.within-time.Second)) {
				t.Errorf("handler's deadline = %v (set %v), want %v from the call", deadline.Sub(start), ok, c.within)
			}
			if inner.Err() == nil {
				t.Error("the handler's context is still live after it returned")
			}
		})
	}
}

// TestTimeoutEndsTheHandler: a handler that outlasts its deadline sees its
// context end with DeadlineExceeded, each attempt afresh.
func TestTimeoutEndsTheHandler(t *testing.T) {
	var errs []error
	h := timeout(20 * time.Millisecond)(func(ctx context.Context, _ *delivered) (string, error) {
		<-ctx.Done()
		errs = append(errs, ctx.Err())
		return "", transient(ctx.Err())
	})
	retry(1, time.Millisecond)(h)(context.Background(), &delivered{})
	if len(errs) != 2 || !errors.Is(errs[0], context.DeadlineExceeded) || !errors.Is(errs[1], context.DeadlineExceeded) {
		t.Fatalf("attempts ended with %v, want two deadlines exceeded", errs)
	}
}

// TestDispatcherOrderAndConcurrency: work of one task runs in submission
// order, one at a time; work of different tasks runs concurrently, at most
// limit tasks at once.
func TestDispatcherOrderAndConcurrency(t *testing.T) {
	const tasks, perTask, limit = 20, 50, 4
	d := newDispatcher(limit)
	var mu sync.Mutex
	seen := map[string][]int{}
	var running, peak atomic.Int64
	var busy [tasks]atomic.Int32
	for i := range perTask {
		for k := range tasks {
			id := fmt.Sprint("t", k)
			d.submit(id, func() {
				if busy[k].Add(1) != 1 {
					t.Errorf("task %s ran two of its events at once", id)
				}
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(20 * time.Microsecond)
				mu.Lock()
				seen[id] = append(seen[id], i)
				mu.Unlock()
				running.Add(-1)
				busy[k].Add(-1)
			})
		}
	}
	if !d.wait(time.After(10 * time.Second)) {
		t.Fatal("dispatcher did not finish within 10s")
	}
	for id, got := range seen {
		for i, v := range got {
			if v != i {
				t.Fatalf("task %s ran its events in order %v", id, got)
			}
		}
		if len(got) != perTask {
			t.Fatalf("task %s ran %d events, want %d", id, len(got), perTask)
		}
	}
	if p := peak.Load(); p > limit {
		t.Fatalf("%d tasks ran at once, limit %d", p, limit)
	}
	if n := len(d.queues); n != 0 {
		t.Fatalf("tasks with work = %d after wait", n)
	}
}

// TestDispatcherSlowTaskHoldsNoOther: a task whose work blocks does not
// delay other tasks (as long as a slot is free).
func TestDispatcherSlowTaskHoldsNoOther(t *testing.T) {
	d := newDispatcher(8)
	release := make(chan struct{})
	d.submit("slow", func() { <-release })
	runs(t, d, "fast", "a blocked task held back another task")
	close(release)
	if !d.wait(time.After(5 * time.Second)) {
		t.Fatal("dispatcher did not finish")
	}
}

// TestDispatcherAbandon: after abandon, queued work is dropped; the running
// work finishes.
func TestDispatcherAbandon(t *testing.T) {
	d := newDispatcher(2)
	release, started := make(chan struct{}), make(chan struct{})
	var ran atomic.Int64
	d.submit("t", func() { close(started); <-release; ran.Add(1) })
	<-started
	d.submit("t", func() { ran.Add(1) })
	d.submit("t", func() { ran.Add(1) })
	d.abandon()
	close(release)
	if !d.wait(time.After(5 * time.Second)) {
		t.Fatal("dispatcher did not finish")
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("%d functions ran after abandon, want only the running one", n)
	}
}

// The runners are a pool: a runner that finished a task takes the next
// (at most limit runners however many tasks come and go), and stop ends
// them.
func TestDispatcherRunnersArePooled(t *testing.T) {
	const limit = 3
	d := newDispatcher(limit)
	before := runtime.NumGoroutine()
	var ran atomic.Int64
	for i := range 500 {
		d.submit(fmt.Sprint("t", i), func() { ran.Add(1) })
		// The count is the process's: a goroutine another test left (a
		// timer's, a connection's closing) can come and go meanwhile. A
		// runner too many stays until stop; so look again before failing.
		if n := runtime.NumGoroutine() - before; n > limit {
			time.Sleep(100 * time.Millisecond)
			if n := runtime.NumGoroutine() - before; n > limit {
				t.Fatalf("after %d tasks, %d goroutines more than before, want at most %d runners", i+1, n, limit)
			}
		}
	}
	if !d.wait(time.After(10 * time.Second)) {
		t.Fatal("dispatcher did not finish within 10s")
	}
	if ran.Load() != 500 {
		t.Fatalf("ran %d of 500", ran.Load())
	}
	d.mu.Lock()
	started := d.runners
	d.mu.Unlock()
	if started > limit {
		t.Fatalf("%d runners started for 500 tasks, want at most %d", started, limit)
	}
	d.stop()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after stop, want %d", runtime.NumGoroutine(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// After stop, work still runs (on a runner that ends with it).
	runs(t, d, "late", "work submitted after stop did not run")
}

// runs submits work under key to d and fails with why unless it runs
// within 10 s.
func runs(t *testing.T, d *dispatcher, key, why string) {
	t.Helper()
	done := make(chan struct{})
	d.submit(key, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// testCard parses a card of about kib KiB, distinct per i: one long
// description, or (many) many small skills, the shape whose parsed model
// outweighs its body most.
func testCard(t testing.TB, i, kib int, many bool) (string, *detector.Card) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"card %d","version":"1","url":"https://a.example","protocolVersion":"0.3.0","capabilities":{},`+
		`"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[`, i)
	if many {
		for j := 0; b.Len() < kib<<10; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"s%d","name":"n","description":"d","tags":["t"],"inputModes":["a/b"]}`, j)
		}
		b.WriteString(`]}`)
	} else {
		b.WriteString(`{"id":"s","name":"s","description":"s","tags":["t"]}],"description":"`)
		b.WriteString(strings.Repeat("x", max(kib<<10-b.Len()-2, 0)))
		b.WriteString(`"}`)
	}
	raw := []byte(b.String())
	c, err := detector.Parse(raw)
	if err != nil {
		t.Fatalf("Parse(card %d): %v", i, err)
	}
	d, err := detector.Digest(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

func TestCardCacheEvictsByBytes(t *testing.T) {
	d0, c0 := testCard(t, 0, 100, false)
	one := cardSize(d0, c0)
	c := newCardCache(1000, 3*one+one/2)
	c.put(d0, c0)
	for i := 1; i < 3; i++ {
		c.put(testCard(t, i, 100, false))
	}
	if n, b := c.stats(); n != 3 || b > 3*one+one/2 {
		t.Fatalf("stats() after 3 cards = %d cards, %d bytes; want 3 within %d", n, b, 3*one+one/2)
	}
	d3, c3 := testCard(t, 3, 100, false)
	c.put(d3, c3)
	if n, b := c.stats(); n != 3 || b > 3*one+one/2 {
		t.Fatalf("stats() after a 4th card = %d cards, %d bytes; want 3 within %d", n, b, 3*one+one/2)
	}
	if _, ok := c.get(d0); ok {
		t.Error("the oldest card is still cached")
	}
	if got, ok := c.get(d3); !ok || got != c3 {
		t.Error("the newest card is not cached")
	}
	// A card larger than the whole bound is not cached and evicts nothing.
	dBig, cBig := testCard(t, 4, 400, false)
	c.put(dBig, cBig)
	if _, ok := c.get(dBig); ok {
		t.Error("a card larger than the bound was cached")
	}
	if n, _ := c.stats(); n != 3 {
		t.Errorf("stats() after an oversize card = %d cards, want 3", n)
	}
	// The count bound still holds.
	small := newCardCache(2, 1<<40)
	for i := range 5 {
		small.put(testCard(t, i, 1, true))
	}
	if n, _ := small.stats(); n != 2 {
		t.Errorf("count-bounded cache holds %d cards, want 2", n)
	}
}

// TestCardSizeCoversHeap checks the card cache's estimate against the heap:
// the parsed cards of both shapes keep live no more than cardSize says, so
// a full cache stays in its bound.
func TestCardSizeCoversHeap(t *testing.T) {
	for _, many := range []bool{false, true} {
		const n = 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		keep := make([]*detector.Card, n)
		var est int64
		for i := range keep {
			var d string
			d, keep[i] = testCard(t, i, 256, many)
			est += cardSize(d, keep[i])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(keep)
		if live > est {
			t.Errorf("many skills %v: %d cards keep %d bytes live, cardSize estimates %d: under", many, n, live, est)
		}
		t.Logf("many skills %v: %d parsed 256 KiB cards: live %d bytes, estimated %d (%.2f)", many, n, live, est, float64(est)/float64(live))
	}
}

// pinnedMsg is a message of one pinning of its partition: all notePinning
// reads of it is its Nats-Pin-Id header.
type pinnedMsg struct {
	jetstream.Msg // nil: what the test must not call panics
	h             nats.Header
}

func (m pinnedMsg) Headers() nats.Header { return m.h }

// TestNewPinningForgetsPins: a worker over a store.CachedPins makes it
// forget before the first message of each pinning of a partition (the
// first one included), and at no other message.
func TestNewPinningForgetsPins(t *testing.T) {
	js, cfg := provisioned(t)
	pins := store.NewCachedPins(memstore.NewPins[task.Pin](), 10)
	w, err := New(js, Options{Name: "pinning", Config: cfg, Pins: pins, Cards: memstore.NewCards(), Leases: memstore.NewLeases()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var last string
	for i, c := range []struct {
		pinID   string
		forgets bool
	}{{"A", true}, {"A", false}, {"", false}, {"B", true}, {"B", false}, {"A", true}} {
		if _, err := pins.Create(t.Context(), task.Pin{TaskID: "t" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		h := nats.Header{}
		if c.pinID != "" {
			h.Set("Nats-Pin-Id", c.pinID)
		}
		w.notePinning(&last, pinnedMsg{h: h})
		if forgot := pins.Stats().Len == 0; forgot != c.forgets {
			t.Errorf("message %d (pin id %q): forgot = %v, want %v", i, c.pinID, forgot, c.forgets)
		}
	}
}
