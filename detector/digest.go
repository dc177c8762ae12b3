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

// DigestMemoSize is the number of entries in the memo behind Digest, and
// DigestMemoBytes the most it holds of the bodies (of up to DigestMemoBody
// bytes) it keeps to verify hits against: about 5 MiB in all.
const (
	DigestMemoSize  = 4096
	DigestMemoBytes = 4 << 20
	DigestMemoBody  = 64 << 10
)

// signaturesKey is the top-level card member that card digests and signing
// payloads leave out (A2A v1.0 §8.4.1).
const signaturesKey = "signatures"

// digestOptions canonicalize a card as served, under the jcs default limits
// (1 MiB, 64 levels), without its top-level signatures.
var digestOptions = jcs.Options{Omit: signaturesKey, RequireObject: true}

var defaultMemo = NewDigestMemo(DigestMemoSize)

// Digest returns the digest of the agent card raw as served: "sha256:" and
// the lowercase hex SHA-256 of the RFC 8785 (JCS) canonical form of the card
// with its top-level "signatures" member removed. Whitespace, key order and
// number spelling do not change it; any other edit does.
//
// Results are memoised in a process-wide DigestMemo of DigestMemoSize
// entries; errors are not. Digest checks only that raw is a JSON object: it
// returns the *SyntaxError of Parse otherwise. It is safe for concurrent use.
func Digest(raw []byte) (string, error) { return defaultMemo.Digest(raw) }

// digestUncached canonicalizes and hashes raw, bypassing every memo.
func digestUncached(raw []byte) (string, error) { return digestWith(raw, digestOptions) }

// digestWith is digestUncached under opt.
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

// hexPairs holds, for each byte, its two lowercase hex digits ('0' '0' to
// 'f' 'f') as a big-endian pair.
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for b := range t {
		t[b] = uint16(digits[b>>4])<<8 | uint16(digits[b&0xF])
	}
	return t
}()

// Canonical forms are written into pooled buffers; buffers that grew past
// maxPooledBuf (a huge card) are dropped rather than kept.
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

// DigestMemo memoises card digests by the bytes of the card, evicting the
// least recently used. A body of up to DigestMemoBody bytes is found by its
// seeded hash and compared with the body held, so a hit is never another
// body's digest; a longer one is found by its SHA-256 and not kept. It is safe
// for concurrent use; use NewDigestMemo.
type DigestMemo struct {
	seed  maphash.Seed
	cache lru[memoKey, memoEntry]
}

// memoKey identifies a body: a short one by its seeded hash (sum zero), a
// long one by its SHA-256 (hash zero).
type memoKey struct {
	hash uint64
	sum  [sha256.Size]byte
}

type memoEntry struct {
	raw    []byte // a short body, a copy owned by the memo and never written
	digest string
}

// NewDigestMemo returns a memo of at most size entries (at least 1) and
// DigestMemoBytes of bodies.
func NewDigestMemo(size int) *DigestMemo {
	return &DigestMemo{seed: maphash.MakeSeed(), cache: newLRU[memoKey, memoEntry](max(size, 1), DigestMemoBytes)}
}

// Digest is the package-level Digest with this memo: it returns the memoised
// digest of raw, or computes and remembers it. It returns the errors of the
// package-level Digest, which are not remembered.
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

// keeps reports whether the memo keeps bodies of n bytes to compare.
func keeps(n int) bool { return n <= DigestMemoBody }

// lru is a map bounded by its number of entries and by the sum of their
// costs, evicting the least recently used. Safe for concurrent use.
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

// get returns the value of k and marks it used.
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

// Len returns the number of entries held.
func (c *lru[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.index)
}
