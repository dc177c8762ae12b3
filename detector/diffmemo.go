package detector

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// diffMemoOverhead is what an entry costs beside its findings.
const diffMemoOverhead = 256

// DiffMemo remembers Diff's findings per pair of cards, keyed by both digests
// and both cards' signatureState (what the digest leaves out). An entry counts
// as twice its findings' JSON encoding plus an overhead. Safe for concurrent
// use; the nil *DiffMemo diffs every time.
type DiffMemo struct {
	cache lru[diffKey, []Finding]
}

type diffKey struct{ pinned, live, pinnedSigs, liveSigs string }

// signatureState encodes (length-prefixed) what of c its digest does not
// determine: whether it was served signed, the nonconformance in its
// "signatures" and each verification outcome. "" in the common unsigned case.
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

// NewDiffMemo returns a memo bounded to maxBytes; nil (no memo) when it is
// not positive.
func NewDiffMemo(maxBytes int64) *DiffMemo {
	if maxBytes <= 0 {
		return nil
	}
	return &DiffMemo{cache: newLRU[diffKey, []Finding](math.MaxInt, int(min(maxBytes, math.MaxInt)))}
}

// Diff returns Diff(pinned, live) for the cards of those digests. The result
// may be shared: do not modify it (appending to it allocates).
func (m *DiffMemo) Diff(pinnedDigest, liveDigest string, pinned, live *Card) []Finding {
	if m == nil || pinnedDigest == "" || liveDigest == "" || pinned == nil || live == nil {
		return Diff(pinned, live)
	}
	k := diffKey{pinnedDigest, liveDigest, signatureState(pinned), signatureState(live)}
	if fs, ok := m.cache.get(k); ok {
		return fs
	}
	fs := Diff(pinned, live)
	fs = fs[:len(fs):len(fs)]
	size := diffMemoOverhead + len(k.pinned) + len(k.live) + len(k.pinnedSigs) + len(k.liveSigs)
	b, err := json.Marshal(fs)
	if err != nil || size+2*len(b) > m.cache.maxCost {
		return fs // not measurable, or too large: not kept
	}
	return m.cache.put(k, fs, size+2*len(b), func([]Finding) bool { return true })
}

func (m *DiffMemo) Len() int {
	if m == nil {
		return 0
	}
	return m.cache.Len()
}

// Bytes returns what the memo counts its pairs as.
func (m *DiffMemo) Bytes() int64 {
	if m == nil {
		return 0
	}
	m.cache.mu.Lock()
	defer m.cache.mu.Unlock()
	return int64(m.cache.cost)
}
