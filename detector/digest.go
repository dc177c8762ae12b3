package detector

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Bounds of the memo behind Digest: entries, bytes of the bodies it keeps to
// verify hits against, and the longest body it keeps.
const (
	DigestMemoSize  = 4096
	DigestMemoBytes = 4 << 20
	DigestMemoBody  = 64 << 10
)

// signaturesKey is the member digests leave out (A2A v1.0 §8.4.1).
const signaturesKey = "signatures"

var digestOptions = jcs.Options{Omit: signaturesKey, RequireObject: true}

var defaultMemo = NewDigestMemo(DigestMemoSize)

// Digest returns "sha256:<hex>" of the RFC 8785 canonical form of the card
// raw as served, without its top-level "signatures". It checks only that raw
// is a JSON object (else the *SyntaxError of Parse). Results, not errors, are
// memoised process-wide.
func Digest(raw []byte) (string, error) { return defaultMemo.Digest(raw) }

func digestUncached(raw []byte) (string, error) { return digestWith(raw, digestOptions) }

func digestWith(raw []byte, opt jcs.Options) (string, error) {
	bp := getBuf()
	b, err := jcs.AppendCanonical((*bp)[:0], raw, opt)
	if err != nil {
		putBuf(bp, b)
		return "", err
	}
	sum := sha256.Sum256(b)
	putBuf(bp, b)
	return formatDigest(sum), nil
}

// formatDigest writes sum as "sha256:<hex>", two hex digits per table
// lookup: encoding/hex costs about as much as canonicalizing a small object.
func formatDigest(sum [sha256.Size]byte) string {
	const prefix = "sha256:"
	var out [len(prefix) + 2*sha256.Size]byte
	copy(out[:], prefix)
	hexOut := out[len(prefix):]
	for i, b := range sum {
		binary.BigEndian.PutUint16(hexOut[2*i:], hexPairs[b])
	}
	return string(out[:])
}

// hexPairs holds each byte's two hex digits as a big-endian pair.
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for b := range t {
		t[b] = uint16(digits[b>>4])<<8 | uint16(digits[b&0xF])
	}
	return t
}()

// Canonical forms are written into pooled buffers; one that grew past
// maxPooledBuf is dropped.
const maxPooledBuf = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(bp *[]byte, b []byte) {
	if cap(b) > maxPooledBuf {
		return
	}
	*bp = b[:0]
	bufPool.Put(bp)
}

// DigestMemo memoises card digests by the card's bytes, least recently used
// out. A body of up to DigestMemoBody bytes is found by its seeded hash and
// compared with the copy held, so a hit is never another body's digest; a
// longer one is found by its SHA-256. Safe for concurrent use.
type DigestMemo struct {
	seed  maphash.Seed
	cache lru[memoKey, memoEntry]
}

// memoKey is a short body's seeded hash or a long one's SHA-256.
type memoKey struct {
	hash uint64
	sum  [sha256.Size]byte
}

type memoEntry struct {
	raw    []byte // a short body, a copy owned by the memo and never written
	digest string
}

// NewDigestMemo returns a memo of at most size entries and DigestMemoBytes.
func NewDigestMemo(size int) *DigestMemo {
	return &DigestMemo{seed: maphash.MakeSeed(), cache: newLRU[memoKey, memoEntry](max(size, 1), DigestMemoBytes)}
}

// Digest is the package-level Digest with this memo.
func (m *DigestMemo) Digest(raw []byte) (string, error) {
	k := m.key(raw)
	// e.raw is never written, so it is compared outside the lock.
	if e, ok := m.cache.get(k); ok && m.same(e, raw) {
		return e.digest, nil
	}
	d, err := digestUncached(raw)
	if err != nil {
		return "", err
	}
	e := memoEntry{digest: d}
	if keeps(len(raw)) {
		if len(raw) > m.cache.maxCost {
			return d, nil
		}
		e.raw = bytes.Clone(raw)
	}
	// Another body of the same hash is replaced: the newer one stays.
	m.cache.put(k, e, len(e.raw), func(old memoEntry) bool { return m.same(old, raw) })
	return d, nil
}

func (m *DigestMemo) same(e memoEntry, raw []byte) bool {
	return !keeps(len(raw)) || bytes.Equal(e.raw, raw)
}

func (m *DigestMemo) key(raw []byte) memoKey {
	if keeps(len(raw)) {
		return memoKey{hash: maphash.Bytes(m.seed, raw)}
	}
	return memoKey{sum: sha256.Sum256(raw)}
}

func keeps(n int) bool { return n <= DigestMemoBody }

// lru is a map bounded by entries and by the sum of their costs, least
// recently used out. Safe for concurrent use.
type lru[K comparable, V any] struct {
	maxLen, maxCost int

	mu    sync.Mutex
	index map[K]*list.Element // → *lruEntry
	order list.List
	cost  int
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int
}

func newLRU[K comparable, V any](maxLen, maxCost int) lru[K, V] {
	return lru[K, V]{maxLen: maxLen, maxCost: maxCost, index: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.index[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).val, true
}

// put stores v at k and returns it, unless k holds a value for which keep
// reports true (a concurrent caller stored it first): then it returns that.
func (c *lru[K, V]) put(k K, v V, cost int, keep func(V) bool) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[k]; ok {
		if old := el.Value.(*lruEntry[K, V]).val; keep(old) {
			return old
		}
		c.drop(el)
	}
	c.index[k] = c.order.PushFront(&lruEntry[K, V]{k, v, cost})
	c.cost += cost
	for len(c.index) > c.maxLen || c.cost > c.maxCost {
		c.drop(c.order.Back())
	}
	return v
}

func (c *lru[K, V]) drop(el *list.Element) {
	e := c.order.Remove(el).(*lruEntry[K, V])
	delete(c.index, e.key)
	c.cost -= e.cost
}

func (c *lru[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.index)
}
