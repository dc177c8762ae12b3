package worker

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
	done := make(chan struct{})
	d.submit("fast", func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a blocked task held back another task")
	}
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
	done := make(chan struct{})
	d.submit("late", func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("work submitted after stop did not run")
	}
}
