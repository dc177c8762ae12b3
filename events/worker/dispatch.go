package worker

import (
	"sync"
	"time"
)

// dispatcher runs the handling of events concurrently across tasks and in
// order within a task: per-task order is all the contract needs, and a
// partition-wide order would let one slow agent hold back every task of its
// partition. Each task with work has one queue; its first entry runs, the
// others wait behind it. At most limit tasks run at once (a semaphore); when
// all slots are taken, submit blocks, which stops the partition's consume
// callback and so bounds what is buffered (backpressure). The goroutines it
// starts are owned by the dispatcher: wait returns when all have finished.
type dispatcher struct {
	sem chan struct{}

	mu        sync.Mutex
	queues    map[string][]func() // task → pending work; the head is running
	abandoned bool                // queued work is dropped, not started
	wg        sync.WaitGroup
}

func newDispatcher(limit int) *dispatcher {
	return &dispatcher{sem: make(chan struct{}, limit), queues: make(map[string][]func())}
}

// submit queues fn behind the task's earlier work, starting the task's
// runner when it has none. It blocks while limit tasks are running.
func (d *dispatcher) submit(task string, fn func()) {
	d.mu.Lock()
	q, busy := d.queues[task]
	d.queues[task] = append(q, fn)
	d.mu.Unlock()
	if busy {
		return
	}
	d.sem <- struct{}{}
	d.wg.Add(1)
	go d.run(task)
}

// run executes the task's queue in order until it is empty.
func (d *dispatcher) run(task string) {
	defer d.wg.Done()
	defer func() { <-d.sem }()
	for {
		d.mu.Lock()
		if d.abandoned {
			delete(d.queues, task)
			d.mu.Unlock()
			return
		}
		fn := d.queues[task][0]
		d.mu.Unlock()
		fn()
		d.mu.Lock()
		q := d.queues[task][1:]
		if len(q) == 0 {
			delete(d.queues, task)
			d.mu.Unlock()
			return
		}
		d.queues[task] = q
		d.mu.Unlock()
	}
}

// abandon drops the work that has not started (its messages are not
// acknowledged: they are redelivered) and refuses no submission; running
// work finishes.
func (d *dispatcher) abandon() {
	d.mu.Lock()
	d.abandoned = true
	d.mu.Unlock()
}

// isAbandoned reports whether abandon was called.
func (d *dispatcher) isAbandoned() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.abandoned
}

// inFlight returns how many tasks have work queued or running.
func (d *dispatcher) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queues)
}

// wait blocks until every submitted function has run, or until a value
// arrives on deadline (then it reports false). The goroutine it starts ends
// when the running functions do.
func (d *dispatcher) wait(deadline <-chan time.Time) bool {
	idle := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return true
	case <-deadline:
		return false
	}
}
