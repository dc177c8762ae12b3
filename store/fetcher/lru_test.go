package fetcher

import (
	"fmt"
	"testing"
)

// check reports an lru whose byte count is not the sum of its entries'
// sizes, that exceeds a bound, or whose map and list disagree.
func (c *lru[K, V]) check() error {
	var sum int64
	for el := c.order.Front(); el != nil; el = el.Next() {
		sum += el.Value.(*lruEntry[K, V]).size
	}
	if c.bytes != sum || c.bytes > c.maxBytes || c.order.Len() > c.maxEntries || c.order.Len() != len(c.items) {
		return fmt.Errorf("%d entries (%d in the map) of %d bytes (entries sum to %d); bounds %d entries, %d bytes",
			c.order.Len(), len(c.items), c.bytes, sum, c.maxEntries, c.maxBytes)
	}
	return nil
}

func TestLRU(t *testing.T) {
	c := newLRU[string, int](3, 100)
	for i, k := range []string{"a", "b", "c"} {
		c.put(k, i, 30)
	}
	c.get("a") // b is now the least recently used
	c.put("d", 3, 30)
	if _, ok := c.get("b"); ok {
		t.Error("the least recently used entry was kept past the count bound")
	}
	c.put("e", 4, 60) // 30 (a) + 30 (c) + 30 (d) + 60: c and a go (a was read before d and e)
	for k, want := range map[string]bool{"a": false, "c": false, "d": true, "e": true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("after a 60-byte put: get(%q) found = %v, want %v", k, ok, want)
		}
	}
	c.put("d", 5, 101)
	if _, ok := c.get("d"); ok {
		t.Error("an entry larger than the byte bound was kept, or the value it replaced")
	}
	if v, ok := c.get("e"); !ok || v != 4 || c.len() != 1 || c.size() != 60 {
		t.Errorf("get(e) = %d, %v; len %d, size %d; want 4, true; 1, 60", v, ok, c.len(), c.size())
	}
	c.remove("e")
	if c.len() != 0 || c.size() != 0 {
		t.Errorf("after remove: len %d, size %d, want 0, 0", c.len(), c.size())
	}
	if err := c.check(); err != nil {
		t.Error(err)
	}
}
