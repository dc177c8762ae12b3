package servicetest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// WaitTimeout bounds Collector.WaitFor.
const WaitTimeout = 15 * time.Second

// Collector gathers every event of the events stream, decoded; one that
// does not decode fails the test.
type Collector struct {
	js     jetstream.JetStream
	stream string

	mu      sync.Mutex
	evs     []events.Event
	lastSeq uint64 // the stream sequence of the last message consumed
}

// Collect starts a Collector on cfg's events stream through js until the
// test ends.
func Collect(t testing.TB, js jetstream.JetStream, cfg store.Config) *Collector {
	t.Helper()
	cfg.SetDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, cfg.EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{js: js, stream: cfg.EventsStream}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var seq uint64
		if md, err := m.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		ev, err := events.Decode(m)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lastSeq = max(c.lastSeq, seq)
		if err != nil {
			t.Errorf("outbound event on %s does not decode: %v", m.Subject(), err)
			return
		}
		c.evs = append(c.evs, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return c
}

// All returns the events of type typ collected so far ("": every event), in
// stream order.
func (c *Collector) All(typ string) []events.Event {
	return c.Events(typ, "")
}

// Events returns the events of type typ ("": any) of task taskID ("": any).
func (c *Collector) Events(typ, taskID string) []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []events.Event
	for _, ev := range c.evs {
		if (typ == "" || ev.Type == typ) && (taskID == "" || ev.TaskID() == taskID) {
			out = append(out, ev)
		}
	}
	return out
}

// Drifts returns the card.drift data of a task.
func (c *Collector) Drifts(taskID string) []events.Drift {
	return dataOf[events.Drift](c.Events(events.TypeDrift, taskID))
}

// Unreachable returns the card.unreachable data of a task.
func (c *Collector) Unreachable(taskID string) []events.Unreachable {
	return dataOf[events.Unreachable](c.Events(events.TypeUnreachable, taskID))
}

func dataOf[D events.Data](evs []events.Event) []D {
	out := make([]D, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.Data.(D))
	}
	return out
}

// CountBy returns how many events of type typ each task has.
func (c *Collector) CountBy(typ string) map[string]int {
	m := map[string]int{}
	for _, ev := range c.All(typ) {
		m[ev.TaskID()]++
	}
	return m
}

// CaughtUp waits until the collector has consumed every message the events
// stream held when it was called (after Drained: all the workers wrote).
func (c *Collector) CaughtUp(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.js.Stream(ctx, c.stream) // its info as of now
	if err != nil {
		t.Fatalf("collector: stream %s: %v", c.stream, err)
	}
	last := st.CachedInfo().State.LastSeq
	c.WaitFor(t, "the collector consumed the events stream up to its sequence "+strconv.FormatUint(last, 10), func(c *Collector) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.lastSeq >= last
	})
}

// WaitFor waits up to WaitTimeout until cond holds, or fails t naming
// what, with the events collected so far.
func (c *Collector) WaitFor(t testing.TB, what string, cond func(*Collector) bool) {
	t.Helper()
	held := false
	defer func() {
		if !held {
			all := c.All("")
			t.Logf("collected %d events: %v", len(all), Summary(all))
		}
	}()
	natstest.Eventually(t, WaitTimeout, what, func() bool { return cond(c) })
	held = true
}

// Summary names each event by type and task: "card.drift(t1)".
func Summary(evs []events.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Type+"("+e.TaskID()+")")
	}
	return out
}
