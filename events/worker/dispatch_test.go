package worker

import (
	"fmt"
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
	if d.inFlight() != 0 {
		t.Fatalf("inFlight = %d after wait", d.inFlight())
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
