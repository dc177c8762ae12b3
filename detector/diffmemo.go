package detector

import (
	"container/list"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// diffMemoOverhead is what a memo entry costs beside its findings' encoded
// size (the entry, its list element and map slot, its key).
const diffMemoOverhead = 256

// DiffMemo remembers Diff's findings per pair of cards, so that a shell
// judging the same pinned and live card at every transition of a drifted
// task diffs them once. A card is a function of its canonical digest and of
// what the digest leaves out (its signatures: signatureState), so a pair is
// keyed by both digests and both cards' signature state.
//
// It is bounded in bytes (each entry counted as its findings' JSON encoding
// twice over, plus a fixed overhead), evicting the least recently used
// pair. Safe for concurrent use; the nil *DiffMemo diffs every time.
type DiffMemo struct {
	max int64

	mu    sync.Mutex
	bytes int64
	m     map[diffKey]*list.Element // → *diffEntry
	lru   list.List
}

type diffKey struct{ pinned, live, pinnedSigs, liveSigs string }

// signatureState is what of c its digest does not determine: whether it
// was served signed, the nonconformance Parse found in its "signatures"
// member, and each verification outcome, encoded without ambiguity
// (length-prefixed fields). "" for a card served without signatures and
// with no nonconformance there — the common case, which costs no
// allocation.
func signatureState(c *Card) string {
	var sigConf []Nonconformance
	for _, n := range c.Conformance {
		if n.Path == "/"+signaturesKey || strings.HasPrefix(n.Path, "/"+signaturesKey+"/") {
			sigConf = append(sigConf, n)
		}
	}
	if !c.HasSignatures && len(c.Signatures) == 0 && len(sigConf) == 0 {
		return ""
	}
	var b []byte
	field := func(s string) { b = strconv.AppendInt(b, int64(len(s)), 10); b = append(b, ':'); b = append(b, s...) }
	b = strconv.AppendBool(b, c.HasSignatures)
	for _, n := range sigConf {
		b = append(b, 'n')
		field(n.Path)
		field(n.Message)
	}
	for _, s := range c.Signatures {
		b = append(b, 's')
		field(s.KeyID)
		field(s.Alg)
		field(s.JKU)
		field(s.Thumbprint)
		field(s.Source)
		field(s.Reason)
		b = strconv.AppendBool(b, s.Verified)
	}
	return string(b)
}

type diffEntry struct {
	key      diffKey
	findings []Finding
	size     int64
}

// NewDiffMemo returns a memo bounded to maxBytes; nil when maxBytes is not
// positive (no memo).
func NewDiffMemo(maxBytes int64) *DiffMemo {
	if maxBytes <= 0 {
		return nil
	}
	return &DiffMemo{max: maxBytes, m: make(map[diffKey]*list.Element)}
}

// Diff returns Diff(pinned, live), where pinned is the card whose canonical
// digest is pinnedDigest and live the card of liveDigest. The result may be
// shared with other callers: do not modify it or its findings (appending to
// it allocates: its capacity is its length).
func (m *DiffMemo) Diff(pinnedDigest, liveDigest string, pinned, live *Card) []Finding {
	if m == nil || pinnedDigest == "" || liveDigest == "" || pinned == nil || live == nil {
		return Diff(pinned, live)
	}
	k := diffKey{pinnedDigest, liveDigest, signatureState(pinned), signatureState(live)}
	m.mu.Lock()
	if el, ok := m.m[k]; ok {
		m.lru.MoveToFront(el)
		fs := el.Value.(*diffEntry).findings
		m.mu.Unlock()
		return fs
	}
	m.mu.Unlock()

	fs := Diff(pinned, live)
	fs = fs[:len(fs):len(fs)]
	size := int64(diffMemoOverhead + len(k.pinned) + len(k.live) + len(k.pinnedSigs) + len(k.liveSigs))
	if b, err := json.Marshal(fs); err == nil {
		size += 2 * int64(len(b))
	} else {
		return fs // not measurable: not kept
	}
	if size > m.max {
		return fs
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.m[k]; ok { // another caller's, meanwhile
		return el.Value.(*diffEntry).findings
	}
	m.m[k] = m.lru.PushFront(&diffEntry{key: k, findings: fs, size: size})
	m.bytes += size
	for m.bytes > m.max {
		el := m.lru.Back()
		e := el.Value.(*diffEntry)
		m.lru.Remove(el)
		delete(m.m, e.key)
		m.bytes -= e.size
	}
	return fs
}

// Len returns how many pairs the memo holds.
func (m *DiffMemo) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Bytes returns what the memo counts its pairs as.
func (m *DiffMemo) Bytes() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}
