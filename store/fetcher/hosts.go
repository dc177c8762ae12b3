package fetcher

import (
	"context"
	"sync"
)

// hostLimiter bounds concurrent fetches per host. Its map holds an entry only
// while some fetch holds or waits for a slot of that host, so it is bounded by
// the number of fetches in progress.
type hostLimiter struct {
	per   int
	mu    sync.Mutex
	hosts map[string]*hostSlots
}

type hostSlots struct {
	slots chan struct{}
	refs  int // holders and waiters
}

func newHostLimiter(per int) *hostLimiter {
	return &hostLimiter{per: per, hosts: make(map[string]*hostSlots)}
}

// acquire waits for a slot of host, or for ctx. The returned release must be
// called exactly once.
func (l *hostLimiter) acquire(ctx context.Context, host string) (release func(), err error) {
	l.mu.Lock()
	h := l.hosts[host]
	if h == nil {
		h = &hostSlots{slots: make(chan struct{}, l.per)}
		l.hosts[host] = h
	}
	h.refs++
	l.mu.Unlock()

	done := func() {
		l.mu.Lock()
		h.refs--
		if h.refs == 0 {
			delete(l.hosts, host)
		}
		l.mu.Unlock()
	}
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots; done() }, nil
	case <-ctx.Done():
		done()
		return nil, context.Cause(ctx)
	}
}
