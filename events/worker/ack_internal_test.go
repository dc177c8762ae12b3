package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
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
