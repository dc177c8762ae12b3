package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
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
