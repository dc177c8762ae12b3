package service

import "sync"

// Readiness is what a process's /readyz answers: ready, or why not. Open
// and Run keep it, then it asks the running service. Safe for concurrent
// use; the zero Readiness is not ready ("starting").
type Readiness struct {
	mu     sync.Mutex
	reason string
	set    bool
	check  func() string
}

// NotReady returns why the process is not ready, or "" when it is.
func (r *Readiness) NotReady() string {
	r.mu.Lock()
	reason, set, check := r.reason, r.set, r.check
	r.mu.Unlock()
	switch {
	case !set:
		return "starting"
	case reason != "":
		return reason
	case check != nil:
		return check()
	}
	return ""
}

// waitFor records why the process is not ready yet.
func (r *Readiness) waitFor(reason string) {
	r.mu.Lock()
	r.reason, r.set = reason, true
	r.mu.Unlock()
}

// ready records that start-up is over; from now on check says whether the
// process is ready.
func (r *Readiness) ready(check func() string) {
	r.mu.Lock()
	r.reason, r.set, r.check = "", true, check
	r.mu.Unlock()
}
