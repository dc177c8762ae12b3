package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/carddrift/carddrift/store"
)

// Cards is store.Cards in memory. The zero value is ready to use.
type Cards struct {
	mu sync.RWMutex
	m  map[string][]byte
}

// NewCards returns an empty card store.
func NewCards() *Cards { return &Cards{} }

// Put implements store.Cards. It keeps its own copy of raw.
func (c *Cards) Put(_ context.Context, digest string, raw []byte) error {
	key, err := store.DigestKey(digest)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return nil
	}
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[key] = append([]byte{}, raw...)
	return nil
}

// Get implements store.Cards. The caller owns the returned slice.
func (c *Cards) Get(_ context.Context, digest string) ([]byte, error) {
	key, err := store.DigestKey(digest)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	b, ok := c.m[key]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("memstore: get card %s: %w", digest, store.ErrNotFound)
	}
	return append([]byte{}, b...), nil
}
