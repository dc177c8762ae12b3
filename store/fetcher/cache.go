package fetcher

import (
	"bytes"
	"math"
	"sync"

	"github.com/carddrift/carddrift/detector"
)

// cardEntry is a parsed card and its fingerprint, keyed by digest.
type cardEntry struct {
	digest      string
	card        *detector.Card
	fingerprint string
}

func (e *cardEntry) size() int64 { return int64(len(e.card.Raw)) + 512 }

// cardCache is a byte-bounded LRU of parsed cards by digest. It saves a Cards
// round trip and a parse when a 304 or a fresh lease names a digest this
// process has seen. It always keeps the card put last: one larger than the
// bound is counted at the bound.
type cardCache struct {
	mu  sync.Mutex
	lru *lru[string, *cardEntry]
}

func newCardCache(maxBytes int64) *cardCache {
	return &cardCache{lru: newLRU[string, *cardEntry](math.MaxInt, maxBytes)}
}

func (c *cardCache) get(digest string) *cardEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.lru.get(digest)
	return e
}

// put adds e, or replaces the entry of its digest when the body differs:
// signatures are not part of a digest, so a card re-signed (or no longer
// signed) has the digest of the body it replaces, and later observations
// from this cache must carry the newest body's signatures.
func (c *cardCache) put(e *cardEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.get(e.digest); ok && bytes.Equal(old.card.Raw, e.card.Raw) {
		return
	}
	c.lru.put(e.digest, e, min(e.size(), c.lru.maxBytes))
}
