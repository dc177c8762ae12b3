package worker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// inflight bounds the bytes of the events a worker has taken from its pull
// buffers and not yet finished (acknowledged, NAKed or terminated): the
// events queued behind a task's earlier ones and those being handled. The
// consume callback takes an event's bytes before handing it on and blocks
// while they are not free, which stops the partition (backpressure, as the
// dispatcher's task limit does); the event gives them back at its first
// Ack, Nak or Term — or once AckWait has passed since its delivery or its
// last InProgress, when the server redelivers it anyway. An event larger
// than the whole bound takes all of it.
//
// The held events are a list in the order of their deadlines (a take or an
// InProgress puts its event last, AckWait from now): the expired ones are
// at its front, dropped whenever the bytes are counted. No timer per event.
type inflight struct {
	max     int64
	ackWait time.Duration

	mu      sync.Mutex
	used    int64
	list    heldMsg       // sentinel of the held events, earliest deadline first
	waiting int           // takes blocked on free
	free    chan struct{} // closed and replaced when bytes come back to a waiting take
}

func newInflight(max int64, ackWait time.Duration) *inflight {
	f := &inflight{max: max, ackWait: ackWait, free: make(chan struct{})}
	f.list.prev, f.list.next = &f.list, &f.list
	return f
}

// msgSize is what an event counts: its data, subject and headers.
func msgSize(msg jetstream.Msg) int64 {
	n := len(msg.Data()) + len(msg.Subject()) + len(msg.Reply())
	for k, vs := range msg.Headers() {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return int64(n)
}

// take waits until msg's bytes are free and returns msg wrapped so that
// finishing it gives them back; ok is false if ctx ended first.
func (f *inflight) take(ctx context.Context, msg jetstream.Msg) (jetstream.Msg, bool) {
	m := &heldMsg{Msg: msg, f: f, n: min(msgSize(msg), f.max)}
	f.mu.Lock()
	var now time.Time
	for {
		now = time.Now()
		f.expire(now)
		if f.used+m.n <= f.max {
			break
		}
		// Wait for bytes back, or for the earliest deadline.
		free, next := f.free, f.list.next.deadline.Sub(now)
		f.waiting++
		f.mu.Unlock()
		t := time.NewTimer(next)
		select {
		case <-free:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		f.mu.Lock()
		f.waiting--
		if ctx.Err() != nil {
			f.mu.Unlock()
			return msg, false
		}
	}
	f.used += m.n
	f.push(m, now)
	f.mu.Unlock()
	return m, true
}

// expire gives back the bytes of the events whose deadline passed; f.mu is
// held.
func (f *inflight) expire(now time.Time) {
	for m := f.list.next; m != &f.list && !m.deadline.After(now); m = f.list.next {
		f.drop(m)
	}
}

// push puts m last, AckWait from now; f.mu is held.
func (f *inflight) push(m *heldMsg, now time.Time) {
	m.deadline = now.Add(f.ackWait)
	m.prev, m.next = f.list.prev, &f.list
	m.prev.next, f.list.prev = m, m
}

// drop takes m off the list and gives its bytes back (once); f.mu is held.
func (f *inflight) drop(m *heldMsg) {
	if m.next == nil {
		return
	}
	m.prev.next, m.next.prev = m.next, m.prev
	m.prev, m.next = nil, nil
	f.used -= m.n
	if f.waiting > 0 {
		close(f.free)
		f.free = make(chan struct{})
	}
}

// held returns the bytes taken now.
func (f *inflight) held() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(time.Now())
	return f.used
}

// heldMsg is an event holding n bytes of an inflight until it is finished.
type heldMsg struct {
	jetstream.Msg
	f *inflight
	n int64

	// On f's list, under f.mu (next nil: off it).
	prev, next *heldMsg
	deadline   time.Time
}

func (m *heldMsg) release() {
	m.f.mu.Lock()
	m.f.drop(m)
	m.f.mu.Unlock()
}

// Ack implements jetstream.Msg, giving the bytes back.
func (m *heldMsg) Ack() error { defer m.release(); return m.Msg.Ack() }

// DoubleAck implements jetstream.Msg, giving the bytes back.
func (m *heldMsg) DoubleAck(ctx context.Context) error {
	defer m.release()
	return m.Msg.DoubleAck(ctx)
}

// Nak implements jetstream.Msg, giving the bytes back.
func (m *heldMsg) Nak() error { defer m.release(); return m.Msg.Nak() }

// NakWithDelay implements jetstream.Msg, giving the bytes back.
func (m *heldMsg) NakWithDelay(d time.Duration) error {
	defer m.release()
	return m.Msg.NakWithDelay(d)
}

// Term implements jetstream.Msg, giving the bytes back.
func (m *heldMsg) Term() error { defer m.release(); return m.Msg.Term() }

// TermWithReason implements jetstream.Msg, giving the bytes back.
func (m *heldMsg) TermWithReason(reason string) error {
	defer m.release()
	return m.Msg.TermWithReason(reason)
}

// InProgress implements jetstream.Msg: the event stays in flight for
// another AckWait (last on the list).
func (m *heldMsg) InProgress() error {
	f := m.f
	f.mu.Lock()
	if m.next != nil {
		m.prev.next, m.next.prev = m.next, m.prev
		f.push(m, time.Now())
	}
	f.mu.Unlock()
	return m.Msg.InProgress()
}
