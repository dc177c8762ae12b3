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
// DigestMemoBytes the most it holds of the card bodies it keeps to verify
// hits against (bodies of up to DigestMemoBody bytes; longer ones are
// memoised by their SHA-256 and not kept). Beside the bodies an entry costs
// about 300 bytes (a 71-byte digest, a list element and map overhead), so
// the memo holds at most about 5 MiB.
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

// DigestMemo memoises card digests by the bytes of the card. For a body of
// up to DigestMemoBody bytes a hit is a seeded hash of it (hash/maphash), a
// map lookup and a comparison with the body held, so it never returns the
// digest of another body; a longer body is looked up by its SHA-256 and not
// kept. It holds at most its size entries and DigestMemoBytes of bodies,
// evicting the least recently used. It is safe for concurrent use; the zero
// value is not usable, use NewDigestMemo.
type DigestMemo struct {
	seed     maphash.Seed
	size     int
	maxBytes int

	mu    sync.Mutex
	index map[memoKey]*list.Element // → *memoEntry
	lru   list.List
	bytes int // length of the bodies held
}

// memoKey identifies a body: a short one by its seeded hash (sum zero), a
// long one by its SHA-256 (hash zero).
type memoKey struct {
	hash uint64
	sum  [sha256.Size]byte
}

type memoEntry struct {
	key    memoKey
	raw    []byte // a short body, a copy owned by the memo and never written
	digest string
}

// NewDigestMemo returns a memo of at most size entries (at least 1) and
// DigestMemoBytes of bodies.
func NewDigestMemo(size int) *DigestMemo {
	size = max(size, 1)
	return &DigestMemo{
		seed:     maphash.MakeSeed(),
		size:     size,
		maxBytes: DigestMemoBytes,
		index:    make(map[memoKey]*list.Element, size),
	}
}

// Digest is the package-level Digest with this memo: it returns the memoised
// digest of raw, or computes and remembers it. It returns the errors of the
// package-level Digest, which are not remembered.
func (m *DigestMemo) Digest(raw []byte) (string, error) {
	k := m.key(raw)
	if d, ok := m.lookup(k, raw); ok {
		return d, nil
	}
	d, err := digestUncached(raw)
	if err != nil {
		return "", err
	}
	m.store(k, raw, d)
	return d, nil
}

func (m *DigestMemo) key(raw []byte) memoKey {
	if keeps(len(raw)) {
		return memoKey{hash: maphash.Bytes(m.seed, raw)}
	}
	return memoKey{sum: sha256.Sum256(raw)}
}

// keeps reports whether the memo keeps bodies of n bytes to compare.
func keeps(n int) bool { return n <= DigestMemoBody }

// Len returns the number of digests held.
func (m *DigestMemo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.index)
}

func (m *DigestMemo) lookup(k memoKey, raw []byte) (string, bool) {
	m.mu.Lock()
	el, ok := m.index[k]
	if !ok {
		m.mu.Unlock()
		return "", false
	}
	m.lru.MoveToFront(el)
	e := el.Value.(*memoEntry)
	m.mu.Unlock()
	// e.raw is never written, so it is compared outside the lock.
	return e.digest, !keeps(len(raw)) || bytes.Equal(e.raw, raw)
}

func (m *DigestMemo) store(k memoKey, raw []byte, digest string) {
	var body []byte
	if keeps(len(raw)) {
		if len(raw) > m.maxBytes {
			return
		}
		body = bytes.Clone(raw)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.index[k]; ok {
		if !keeps(len(raw)) || bytes.Equal(el.Value.(*memoEntry).raw, raw) {
			return // a concurrent caller stored it first
		}
		m.drop(el) // another body of the same hash: the newer one stays
	}
	m.index[k] = m.lru.PushFront(&memoEntry{key: k, raw: body, digest: digest})
	m.bytes += len(body)
	for len(m.index) > m.size || m.bytes > m.maxBytes {
		m.drop(m.lru.Back())
	}
}

// drop removes an entry.
func (m *DigestMemo) drop(el *list.Element) {
	e := m.lru.Remove(el).(*memoEntry)
	delete(m.index, e.key)
	m.bytes -= len(e.raw)
}
