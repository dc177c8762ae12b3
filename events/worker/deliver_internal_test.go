package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

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
