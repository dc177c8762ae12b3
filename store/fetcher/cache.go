package fetcher

import (
	"bytes"
	"container/list"
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
// process has seen.
type cardCache struct {
	max   int64
	mu    sync.Mutex
	used  int64
	order *list.List // front = most recently used; values are *cardEntry
	byKey map[string]*list.Element
}

func newCardCache(maxBytes int64) *cardCache {
	return &cardCache{max: maxBytes, order: list.New(), byKey: make(map[string]*list.Element)}
}

func (c *cardCache) get(digest string) *cardEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[digest]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cardEntry)
}

// put adds e, or replaces the entry of its digest when the body differs:
// signatures are not part of a digest, so a card re-signed (or no longer
// signed) has the digest of the body it replaces, and later observations
// from this cache must carry the newest body's signatures.
func (c *cardCache) put(e *cardEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[e.digest]; ok {
		c.order.MoveToFront(el)
		old := el.Value.(*cardEntry)
		if bytes.Equal(old.card.Raw, e.card.Raw) {
			return
		}
		el.Value = e
		c.used += e.size() - old.size()
	} else {
		c.byKey[e.digest] = c.order.PushFront(e)
		c.used += e.size()
	}
	// Evict least recently used entries, never the one just put.
	for c.used > c.max && c.order.Len() > 1 {
		old := c.order.Back()
		oe := old.Value.(*cardEntry)
		c.order.Remove(old)
		delete(c.byKey, oe.digest)
		c.used -= oe.size()
	}
}
