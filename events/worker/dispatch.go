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
// callback and so bounds what is buffered (backpressure).
//
// The queues are run by a pool of runner goroutines, started as tasks need
// them up to limit, each running one task's queue after another until stop:
// a runner keeps the stack it grew, where a goroutine per task would grow a
// fresh one for every task (copying stacks was 6% of serve's CPU in the
// 400-agent mix). The runners are owned by the dispatcher and end at stop
// (a busy one once its task's queue is empty); wait returns when all
// submitted work has run.
type dispatcher struct {
	sem   chan struct{}
	limit int
	ready chan string // hands a task to an idle runner (unbuffered)
	quit  chan struct{}
	once  sync.Once

	mu        sync.Mutex
	queues    map[string][]func() // task → pending work; the head is running
	abandoned bool                // queued work is dropped, not started
	runners   int                 // started, at most limit
	work      sync.WaitGroup      // one per task with queued or running work
}

func newDispatcher(limit int) *dispatcher {
	return &dispatcher{
		sem: make(chan struct{}, limit), limit: limit, ready: make(chan string), quit: make(chan struct{}),
		queues: make(map[string][]func()),
	}
}

// submit queues fn behind the task's earlier work, handing the task to a
// runner when it has none. It blocks while limit tasks are running.
func (d *dispatcher) submit(task string, fn func()) {
	d.mu.Lock()
	q, busy := d.queues[task]
	d.queues[task] = append(q, fn)
	if !busy {
		d.work.Add(1)
	}
	d.mu.Unlock()
	if busy {
		return
	}
	d.sem <- struct{}{}
	select {
	case d.ready <- task:
		return
	default:
	}
	d.mu.Lock()
	spawn := d.runners < d.limit
	if spawn {
		d.runners++
	}
	d.mu.Unlock()
	if !spawn {
		// Every runner is started and one has freed the slot just taken:
		// it takes the task as soon as it is idle — unless the
		// dispatcher stopped meanwhile.
		select {
		case d.ready <- task:
			return
		case <-d.quit:
		}
	}
	go d.runner(task)
}

// runner runs task's queue, then the queue of each task handed to it, until
// the dispatcher stops.
func (d *dispatcher) runner(task string) {
	for {
		d.run(task)
		select {
		case task = <-d.ready:
		case <-d.quit:
			return
		}
	}
}

// run executes the task's queue in order until it is empty, then frees
// the task's slot.
func (d *dispatcher) run(task string) {
	defer d.work.Done()
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

// stop ends the runners: idle ones now, busy ones once their task's queue
// is empty; it does not wait for them. Work submitted after stop still runs
// (each task on a goroutine that ends with it).
func (d *dispatcher) stop() { d.once.Do(func() { close(d.quit) }) }

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

// wait blocks until every submitted function has run, or until a value
// arrives on deadline (then it reports false). The goroutine it starts ends
// when the running functions do.
func (d *dispatcher) wait(deadline <-chan time.Time) bool {
	idle := make(chan struct{})
	go func() {
		d.work.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return true
	case <-deadline:
		return false
	}
}
