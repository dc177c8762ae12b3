package fetcher

import (
	"context"
	"sync"

	"github.com/carddrift/carddrift/store"
)

// maxLocalLeases bounds the lease table a Fetcher keeps when Options.Leases is
// nil.
const maxLocalLeases = 1 << 16

// memLeases is the in-process store.Leases used when no shared one is given.
// When full, it drops an arbitrary lease that is not claimed; a dropped lease
// only costs one more fetch.
type memLeases struct {
	max int
	mu  sync.Mutex
	m   map[string]memLease
	rev uint64
}

type memLease struct {
	l   store.Lease
	rev uint64
}

func newMemLeases(maxEntries int) *memLeases {
	return &memLeases{max: maxEntries, m: make(map[string]memLease)}
}

func (s *memLeases) Get(_ context.Context, cardURL string) (store.Lease, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[cardURL]
	if !ok {
		return store.Lease{}, 0, store.ErrNotFound
	}
	return e.l, e.rev, nil
}

func (s *memLeases) Create(_ context.Context, l store.Lease) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[l.CardURL]; ok {
		return 0, store.ErrExists
	}
	if len(s.m) >= s.max {
		for k, e := range s.m {
			if e.l.Holder == "" {
				delete(s.m, k)
				break
			}
		}
	}
	s.rev++
	s.m[l.CardURL] = memLease{l: l, rev: s.rev}
	return s.rev, nil
}

func (s *memLeases) Update(_ context.Context, l store.Lease, rev uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[l.CardURL]
	if !ok {
		return 0, store.ErrNotFound
	}
	if e.rev != rev {
		return 0, store.ErrConflict
	}
	s.rev++
	s.m[l.CardURL] = memLease{l: l, rev: s.rev}
	return s.rev, nil
}
