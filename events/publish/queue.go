package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// DropWarnEvery is how often at most a Queue warns that it dropped events.
const DropWarnEvery = 10 * time.Second

const (
	// linger is how long the sender waits after a message for more to
	// publish with it, so that one write carries many; maxBatch bounds
	// how many.
	linger   = 2 * time.Millisecond
	maxBatch = 256
	// retryWait is the least time between two publishes of one message;
	// tries is how many ack waits the timeout makes room for.
	retryWait = 250 * time.Millisecond
	tries     = 4
)

// Queue publishes messages to JetStream off the caller's path: Put never
// blocks; a sender publishes what is queued asynchronously (PublishMsgAsync),
// many messages back to back, and an acker waits for their acks in order,
// publishing again (the same message, so the same Nats-Msg-Id: stored once)
// a message whose ack failed or did not come within a quarter of the
// timeout, until the timeout has passed since its first publish (a stream
// leader elected meanwhile, a reconnection, take a few tries). It holds at
// most WithBuffer messages, queued or awaiting their ack; what it cannot
// hold or publish is dropped, counted (Dropped) and logged (WithLogger, at
// most once per DropWarnEvery). It is what client.Emitter publishes with.
//
// Messages of one key (a task id: client.Emitter's) are stored in the order
// they were put, whatever is retried: a message is published only once the
// one put before it with its key is acknowledged or dropped, while messages
// of other keys are published back to back. An ack that never comes keeps its
// slot in js's pending acks (jetstream.WithPublishAsyncMaxPending) unless
// js was made with jetstream.WithPublishAsyncTimeout. Safe for concurrent
// use. Its goroutines end with Close, which the owner must call.
type Queue struct {
	js      jetstream.Publisher
	log     zerolog.Logger
	timeout time.Duration
	limit   int64

	mu     sync.RWMutex // Put holds it shared; Close exclusively to stop Puts
	closed bool
	in     chan keyed // queued, in the order put
	out    chan sent  // published, awaiting ack, in the same order

	keyMu  sync.Mutex
	parked map[string][]*nats.Msg // keys with a message published and unresolved → those put behind it

	held     atomic.Int64  // queued or awaiting ack
	put      atomic.Uint64 // accepted by Put
	resolved atomic.Uint64 // acknowledged or dropped, in the order put
	dropped  atomic.Uint64
	warned   atomic.Int64 // unix nanos of the last warning

	waitMu  sync.Mutex
	waiters []waiter     // Flush calls waiting for resolved to reach their target
	waiting atomic.Int32 // len(waiters)

	quit      chan struct{} // closed when Close stops waiting: drop the rest
	stopped   chan struct{} // closed when both goroutines have returned
	closeOnce sync.Once
	closeErr  error
}

type keyed struct {
	key string
	msg *nats.Msg
}

type sent struct {
	key string
	msg *nats.Msg
	ack jetstream.PubAckFuture // nil when err is set
	err error
	at  time.Time
}

type waiter struct {
	target uint64
	ch     chan struct{}
}

// NewQueue returns a Queue publishing with js, bounded by WithBuffer, its
// ack waits by WithTimeout, warning with WithLogger (other options are
// ignored), and starts its goroutines. It does not touch the network.
func NewQueue(js jetstream.Publisher, opts ...Option) (*Queue, error) {
	if js == nil {
		return nil, errors.New("events: nil JetStream publisher")
	}
	o := defaultOptions()
	if err := o.apply(opts); err != nil {
		return nil, err
	}
	q := &Queue{
		js: js, log: o.log, timeout: o.timeout, limit: int64(o.buffer),
		in:      make(chan keyed, o.buffer),
		out:     make(chan sent, min(o.buffer, 1024)),
		parked:  map[string][]*nats.Msg{},
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	var wg sync.WaitGroup
	wg.Go(q.send)
	wg.Go(q.ack)
	go func() { wg.Wait(); close(q.stopped) }()
	return q, nil
}

// Put queues msg (its Nats-Msg-Id header set, see Publisher.Message) under
// key, the messages whose order it keeps, and returns at once: false when it
// was dropped because the Queue is full or closed.
func (q *Queue) Put(key string, msg *nats.Msg) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.drop(1, "closed", nil)
		return false
	}
	if q.held.Add(1) > q.limit {
		q.held.Add(-1)
		q.drop(1, "buffer full", nil)
		return false
	}
	q.put.Add(1)
	q.in <- keyed{key, msg} // never blocks: held bounds what is in the channel
	return true
}

// Dropped returns how many messages were dropped so far: not queued (the
// Queue was full or closed) or not acknowledged after every attempt. It
// only grows, as a metric counter does.
func (q *Queue) Dropped() uint64 { return q.dropped.Load() }

// Pending returns how many messages the Queue holds: queued, or published
// and awaiting their ack (at most WithBuffer).
func (q *Queue) Pending() int { return int(q.held.Load()) }

// Flush waits until every message put before it is acknowledged or
// dropped (Dropped counts those), or returns ctx's error.
func (q *Queue) Flush(ctx context.Context) error {
	target := q.put.Load()
	if q.resolved.Load() >= target {
		return nil
	}
	ch := make(chan struct{})
	q.waitMu.Lock()
	q.waiters = append(q.waiters, waiter{target, ch})
	q.waiting.Store(int32(len(q.waiters)))
	q.waitMu.Unlock()
	q.wake() // it may have been reached meanwhile
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking messages and waits until what is pending is
// acknowledged, within ctx or, when ctx has no deadline, the timeout; then
// what is left is dropped and ctx's error returned. Safe to call twice (the
// second call waits for the first and returns its result).
func (q *Queue) Close(ctx context.Context) error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.closed = true
		close(q.in)
		q.mu.Unlock()
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, q.timeout)
			defer cancel()
		}
		select {
		case <-q.stopped:
		case <-ctx.Done():
			close(q.quit)
			<-q.stopped
			q.closeErr = fmt.Errorf("events: queue closed before every event was acknowledged: %w", ctx.Err())
		}
	})
	<-q.stopped
	return q.closeErr
}

// send publishes what is queued, a batch at a time, and hands each message
// to ack; a message whose key has one unresolved is parked behind it
// instead (ack publishes it). It returns when in is closed and drained, or
// on quit.
func (q *Queue) send() {
	defer close(q.out)
	timer := time.NewTimer(linger)
	defer timer.Stop()
	batch := make([]keyed, 0, maxBatch)
	for open := true; open; {
		batch, open = q.gather(batch[:0], timer)
		for i, m := range batch {
			if q.park(m) {
				continue
			}
			select {
			case q.out <- q.publish(m.key, m.msg):
			case <-q.quit:
				// Close gave up: what was not handed on is dropped.
				n := len(batch) - i
				for range q.in {
					n++
				}
				q.drop(n, "closed before publishing", nil)
				q.done(n)
				return
			}
		}
	}
}

// gather appends to batch a message from in and those that follow it within
// linger, up to maxBatch; open is false once in is closed and drained.
func (q *Queue) gather(batch []keyed, timer *time.Timer) (_ []keyed, open bool) {
	m, ok := <-q.in
	if !ok {
		return batch, false
	}
	batch = append(batch, m)
	timer.Reset(linger)
	for len(batch) < maxBatch {
		select {
		case m, ok := <-q.in:
			if !ok {
				return batch, false
			}
			batch = append(batch, m)
		case <-timer.C:
			return batch, true
		}
	}
	return batch, true
}

// park holds m behind its key's unresolved message, if there is one, and
// reports whether it did; otherwise m's key is unresolved from now on.
func (q *Queue) park(m keyed) bool {
	q.keyMu.Lock()
	defer q.keyMu.Unlock()
	behind, busy := q.parked[m.key]
	if busy {
		q.parked[m.key] = append(behind, m.msg)
	} else {
		q.parked[m.key] = nil
	}
	return busy
}

// unpark returns the message parked first behind key's resolved one, which
// is key's unresolved message from now on, or nil (nothing of key is).
func (q *Queue) unpark(key string) *nats.Msg {
	q.keyMu.Lock()
	defer q.keyMu.Unlock()
	behind := q.parked[key]
	if len(behind) == 0 {
		delete(q.parked, key)
		return nil
	}
	q.parked[key] = behind[1:]
	return behind[0]
}

// dropParked drops what is parked behind messages that send dropped (Close
// gave up), when nothing is left to resolve them.
func (q *Queue) dropParked() {
	q.keyMu.Lock()
	defer q.keyMu.Unlock()
	n := 0
	for _, behind := range q.parked {
		n += len(behind)
	}
	clear(q.parked)
	if n > 0 {
		q.drop(n, "closed before publishing", nil)
		q.done(n)
	}
}

func (q *Queue) publish(key string, m *nats.Msg) sent {
	ack, err := q.js.PublishMsgAsync(m)
	return sent{key: key, msg: m, ack: ack, err: err, at: time.Now()}
}

// ack waits for each published message's ack, publishing it again when the
// ack failed, settles it and publishes what its key parked behind it (those
// it published itself are waited for before the next of out). It returns
// when out is closed and nothing is left.
func (q *Queue) ack() {
	timer := time.NewTimer(q.timeout)
	defer timer.Stop()
	var own []sent // published here, from parked
	for {
		var s sent
		if len(own) > 0 {
			s, own = own[0], own[1:]
		} else if next, ok := <-q.out; ok {
			s = next
		} else {
			q.dropParked()
			return
		}
		q.settle(s, timer)
		if m := q.unpark(s.key); m != nil {
			select {
			case <-q.quit:
				own = append(own, sent{key: s.key, msg: m, err: errQuit})
			default:
				own = append(own, q.publish(s.key, m))
			}
		}
	}
}

// settle waits for s's ack, publishing it again while the timeout allows,
// and counts it acknowledged or dropped.
func (q *Queue) settle(s sent, timer *time.Timer) {
	defer q.done(1)
	first, err := s.at, s.err
	for {
		if err == nil {
			if err = q.wait(s, first, timer); err == nil {
				return
			}
		}
		if errors.Is(err, errQuit) || time.Since(first) >= q.timeout {
			q.drop(1, "not acknowledged", err)
			return
		}
		if d := retryWait - time.Since(s.at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-q.quit:
			}
		}
		s.ack, err = q.js.PublishMsgAsync(s.msg)
		s.at = time.Now()
	}
}

var errQuit = errors.New("events: queue closed")

// wait waits for s's ack, within a quarter of the timeout from when s was
// published and the timeout from first, its first publish.
func (q *Queue) wait(s sent, first time.Time, timer *time.Timer) error {
	select { // an ack that came while others were waited for is taken as it is
	case <-s.ack.Ok():
		return nil
	case err := <-s.ack.Err():
		return err
	default:
	}
	timer.Reset(min(time.Until(s.at.Add(q.timeout/tries)), time.Until(first.Add(q.timeout))))
	select {
	case <-s.ack.Ok():
		return nil
	case err := <-s.ack.Err():
		return err
	case <-timer.C:
		return context.DeadlineExceeded
	case <-q.quit:
		return errQuit
	}
}

// done settles n messages (acknowledged or dropped) and wakes the Flush
// calls that waited for them.
func (q *Queue) done(n int) {
	q.held.Add(-int64(n))
	q.resolved.Add(uint64(n))
	if q.waiting.Load() > 0 {
		q.wake()
	}
}

func (q *Queue) wake() {
	q.waitMu.Lock()
	defer q.waitMu.Unlock()
	done := q.resolved.Load()
	kept := q.waiters[:0]
	for _, w := range q.waiters {
		if done >= w.target {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(q.waiters[len(kept):])
	q.waiters = kept
	q.waiting.Store(int32(len(kept)))
}

// drop counts n dropped messages and warns, at most once per DropWarnEvery.
func (q *Queue) drop(n int, reason string, err error) {
	total := q.dropped.Add(uint64(n))
	now := time.Now().UnixNano()
	last := q.warned.Load()
	if now-last < int64(DropWarnEvery) || !q.warned.CompareAndSwap(last, now) {
		return
	}
	q.log.Warn().Err(err).Str("reason", reason).Uint64("dropped", total).
		Msg("events dropped: not published, or not acknowledged by JetStream")
}
