package fetcher

import "container/list"

// lru is a least recently used cache bounded by the number of its entries
// and by their sizes (what each retains, as its owner counts it): a put
// evicts the least recently used entries until both bounds hold, and an
// entry larger than maxBytes is not kept at all. It is not safe for
// concurrent use: its owner's mutex guards it.
type lru[K comparable, V any] struct {
	maxEntries int
	maxBytes   int64
	bytes      int64               // sum of the entries' sizes
	items      map[K]*list.Element // → *lruEntry[K, V] in order
	order      *list.List          // front: most recently used
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
	size  int64
}

func newLRU[K comparable, V any](maxEntries int, maxBytes int64) *lru[K, V] {
	return &lru[K, V]{maxEntries: maxEntries, maxBytes: maxBytes, items: make(map[K]*list.Element), order: list.New()}
}

// get returns the value of key, marking it most recently used.
func (c *lru[K, V]) get(key K) (V, bool) {
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).value, true
}

// peek returns the value of key without marking it used.
func (c *lru[K, V]) peek(key K) (V, bool) {
	if el, ok := c.items[key]; ok {
		return el.Value.(*lruEntry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// put keeps value under key, counted at size, in place of what key held
// (which is dropped even when value is too large to keep).
func (c *lru[K, V]) put(key K, value V, size int64) {
	c.remove(key)
	if size > c.maxBytes {
		return // would evict everything and still not fit
	}
	c.items[key] = c.order.PushFront(&lruEntry[K, V]{key: key, value: value, size: size})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.removeElement(c.order.Back())
	}
}

// remove drops key's entry, if any.
func (c *lru[K, V]) remove(key K) {
	if el, ok := c.items[key]; ok {
		c.removeElement(el)
	}
}

func (c *lru[K, V]) removeElement(el *list.Element) {
	e := c.order.Remove(el).(*lruEntry[K, V])
	delete(c.items, e.key)
	c.bytes -= e.size
}

// len returns the number of entries.
func (c *lru[K, V]) len() int { return c.order.Len() }

// size returns the sum of the entries' sizes.
func (c *lru[K, V]) size() int64 { return c.bytes }
