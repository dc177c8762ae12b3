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
type inflight struct {
	max     int64
	ackWait time.Duration

	mu   sync.Mutex
	used int64
	free chan struct{} // closed and replaced whenever bytes are given back
}

func newInflight(max int64, ackWait time.Duration) *inflight {
	return &inflight{max: max, ackWait: ackWait, free: make(chan struct{})}
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
	n := min(msgSize(msg), f.max)
	for {
		f.mu.Lock()
		if f.used+n <= f.max {
			f.used += n
			f.mu.Unlock()
			break
		}
		free := f.free
		f.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return msg, false
		}
	}
	m := &heldMsg{Msg: msg, f: f, n: n}
	m.mu.Lock()
	m.timer = time.AfterFunc(f.ackWait, m.release)
	m.mu.Unlock()
	return m, true
}

func (f *inflight) give(n int64) {
	f.mu.Lock()
	f.used -= n
	close(f.free)
	f.free = make(chan struct{})
	f.mu.Unlock()
}

// held returns the bytes taken now.
func (f *inflight) held() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// heldMsg is an event holding n bytes of an inflight until it is finished.
type heldMsg struct {
	jetstream.Msg
	f *inflight
	n int64

	mu       sync.Mutex
	released bool
	timer    *time.Timer
}

func (m *heldMsg) release() {
	m.mu.Lock()
	if m.released {
		m.mu.Unlock()
		return
	}
	m.released = true
	m.timer.Stop()
	m.mu.Unlock()
	m.f.give(m.n)
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
// another AckWait.
func (m *heldMsg) InProgress() error {
	m.mu.Lock()
	if !m.released {
		m.timer.Reset(m.f.ackWait)
	}
	m.mu.Unlock()
	return m.Msg.InProgress()
}
