package worker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keepAlive tells the server the event is in progress while it waits for
// its turn and while a slow fetch runs, so that it is not redelivered
// meanwhile. It costs nothing for fast events: a timer, no goroutine, until
// the first tick. The returned func stops it; so does the dispatcher's
// abandon (work dropped at a drain timeout is redelivered). handleMsg
// starts it when it queues the event; inProgress stops it.
func (w *Worker) keepAlive(msg jetstream.Msg) func() {
	every := w.cfg.AckWait / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock() // the first tick reads t: not before it is set
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped || w.dispatch.isAbandoned() {
			return
		}
		msg.InProgress()
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		t.Stop()
	}
}

// inProgress ends the event's keepAlive once the handling is over, failed
// or not, before anything outside it acknowledges, NAKs or dead-letters
// the event. (The keepAlive starts when the event is queued, before the
// chain runs: an event queued behind its task's earlier ones is kept in
// progress too.)
func inProgress(h handlerFunc) handlerFunc {
	return func(ctx context.Context, d *delivered) (string, error) {
		outcome, err := h(ctx, d)
		d.stop()
		return outcome, err
	}
}
