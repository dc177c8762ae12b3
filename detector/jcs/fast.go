package jcs

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The fast canonicalizer, tried first by AppendCanonical: the grammar and
// limits of the Scanner, the output of Append, no errors. On anything it does
// not handle (an error, a key with escapes, an object of dupMapAt members) it
// gives up and the tree path (appendTree) writes the output or finds the
// error. It must never accept what the tree path rejects, nor write anything
// else: FuzzFastCanonical checks that.

// fastSpan is one written member of an open object: dst[start:end] holds
// `"key":value`, its key is src[key:key+keyLen], rank is keyRank of it. No
// pointers, so that pushing one costs no write barrier.
type fastSpan struct {
	rank       uint64
	key        int32
	keyLen     int32
	start, end int32
}

// keyRank orders keys as compareKeys does by their first eight bytes: read
// big-endian, zero-padded, with the lead bytes 0xF0..0xF4 (UTF-16
// surrogates, which sort first) moved below 0xEE and 0xEF. Keys of one rank
// share those bytes (no key holds a 0 byte), so compareKeys decides ties.
func keyRank(key string) uint64 {
	var r uint64
	n := min(len(key), 8)
	for i := 0; i < n; i++ {
		c := key[i]
		switch {
		case c >= 0xF0:
			c -= 2
		case c >= 0xEE:
			c += 5
		}
		r |= uint64(c) << (56 - 8*i)
	}
	return r
}

// rankAt is keyRank of s[i:i+n], read as one word when its first eight
// bytes are ASCII (which needs no moving).
func rankAt(s string, i, n int) uint64 {
	if i+8 <= len(s) {
		// The first min(n, 8) bytes (a shift of 64 gives 0).
		w := load8(s, i) & (^uint64(0) >> (64 - 8*min(n, 8)))
		if w&msb == 0 {
			return bits.ReverseBytes64(w)
		}
	}
	return keyRank(s[i : i+n])
}

// keyMask[k] masks the first min(k, 8) bytes of a little-endian word.
var keyMask = func() (t [16]uint64) {
	for k := range t {
		t[k] = ^uint64(0) >> (64 - 8*min(k, 8))
	}
	return t
}()

func compareRanked(ra, rb uint64, a, b string) int {
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	case len(a) <= 8 && len(b) <= 8:
		return 0
	}
	return compareKeys(a, b)
}

// fastCanon is the state of one fast canonicalization, pooled.
type fastCanon struct {
	src      string
	maxDepth int
	depth    int
	omit     string
	omitting bool
	spans    []fastSpan // the members of the open objects, innermost last
	tmp      []byte     // scratch for reordering members
}

var fastPool = sync.Pool{New: func() any { return new(fastCanon) }}

// fastMaxBytes bounds what the fast path takes so that its int32 offsets
// cannot overflow (a canonical number is at most about five times its
// literal, "1e20").
const fastMaxBytes = 1 << 28

// appendFast appends the canonical form of src (checked against the size
// limit) and reports whether it could.
func appendFast(dst []byte, src string, maxDepth int, omit string) ([]byte, bool) {
	f := fastPool.Get().(*fastCanon)
	f.src, f.maxDepth, f.depth = src, maxDepth, 0
	f.omit, f.omitting = omit, omit != ""
	// The output is no longer than the input but for numbers ("1e20").
	dst = slices.Grow(dst, len(src)+8)
	out, i, ok := f.value(dst, skipWS(src, 0))
	ok = ok && skipWS(src, i) == len(src)
	f.spans = reuse(f.spans, maxPooledStack)
	f.tmp = reuse(f.tmp, maxPooledBuf)
	f.src, f.omit = "", ""
	fastPool.Put(f)
	return out, ok
}

func (f *fastCanon) keyOf(sp *fastSpan) string { return f.src[sp.key : sp.key+sp.keyLen] }

func (f *fastCanon) less(a, b *fastSpan) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return compareRanked(a.rank, b.rank, f.keyOf(a), f.keyOf(b)) < 0
}

// skipWS returns the index of the first non-space byte from i, or len(s);
// it inlines for the common case of none.
func skipWS(s string, i int) int {
	if i < len(s) && s[i] > ' ' {
		return i
	}
	return skipSpaceFast(s, i)
}

// skipSpaceFast: a single space and a newline with indentation take the
// fewest operations; any other run goes word by word.
func skipSpaceFast(s string, i int) int {
	if i+1 < len(s) && s[i] == '\n' {
		for i++; i+8 <= len(s); i += 8 {
			// x is zero in the bytes that are spaces; its lowest
			// nonzero byte is the first that is not.
			if x := load8(s, i) ^ (lsb * ' '); x != 0 {
				i += bits.TrailingZeros64(x) >> 3
				if s[i] > ' ' {
					return i
				}
				break
			}
		}
	} else if i+1 < len(s) && s[i] == ' ' && s[i+1] > ' ' {
		return i + 1
	}
	for i+8 <= len(s) {
		w := load8(s, i)
		m := nonZeroBytes(w^(lsb*' ')) & nonZeroBytes(w^(lsb*'\n'))
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		if c := s[i]; c != '\r' && c != '\t' {
			return i
		}
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func (f *fastCanon) value(dst []byte, i int) ([]byte, int, bool) {
	s := f.src
	if i >= len(s) {
		return dst, i, false
	}
	switch c := s[i]; c {
	case '"':
		return copyString(dst, s, i, false)
	case '{':
		return f.object(dst, i)
	case '[':
		return f.array(dst, i)
	case 't':
		if strings.HasPrefix(s[i:], "true") {
			return append(dst, "true"...), i + 4, true
		}
	case 'f':
		if strings.HasPrefix(s[i:], "false") {
			return append(dst, "false"...), i + 5, true
		}
	case 'n':
		if strings.HasPrefix(s[i:], "null") {
			return append(dst, "null"...), i + 4, true
		}
	default:
		if c == '-' || isDigit(c) {
			end, detail := scanNumber(s, i)
			if detail != "" {
				return dst, end, false
			}
			lit := s[i:end]
			if isShortInt(lit) {
				return append(dst, lit...), end, true
			}
			v, err := strconv.ParseFloat(lit, 64)
			if err != nil {
				return dst, end, false
			}
			return AppendFloat(dst, v), end, true
		}
	}
	return dst, i, false
}

// copyString writes the string at s[i], checked, and returns the index past
// it. Plain runs are copied sixteen (then eight) bytes at a time while dst
// has room; the bytes of a word past the run land past len(dst), outside it.
// From its first escape appendUnescaped writes it. A key is written with its
// colon; one with escapes is refused (the tree path decodes it to sort).
func copyString(dst []byte, s string, i int, key bool) ([]byte, int, bool) {
	dst = append(dst, '"')
	j := i + 1
	for {
		if n := len(dst); j+16 <= len(s) && n+16 <= cap(dst) {
			// Two words a turn (sliced once: no bounds checks).
			src, d := s[j:j+16], dst[n:n+16]
			w1, w2 := load8(src, 0), load8(src, 8)
			binary.LittleEndian.PutUint64(d, w1)
			binary.LittleEndian.PutUint64(d[8:], w2)
			m1, m2 := plainEnd(w1), plainEnd(w2)
			if m1|m2 == 0 {
				dst, j = dst[:n+16], j+16
				continue
			}
			// The plain bytes of the first word, then of the second if
			// the first has no special one.
			k1 := bits.TrailingZeros64(m1) >> 3
			k := k1 + bits.TrailingZeros64(m2)>>3&-(k1>>3)
			if j += k; !key && s[j] == '"' {
				// Most strings end here, the quote copied with its word.
				return dst[:n+k+1], j + 1, true
			}
			dst = dst[:n+k]
		} else if n := len(dst); j+8 <= len(s) && n+8 <= cap(dst) {
			w := load8(s, j)
			binary.LittleEndian.PutUint64(dst[n:n+8], w)
			m := plainEnd(w)
			if m == 0 {
				dst, j = dst[:n+8], j+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			dst, j = dst[:n+k], j+k
		} else {
			for j < len(s) && plain[s[j]] {
				dst = append(dst, s[j])
				j++
			}
			if j >= len(s) {
				return dst, j, false
			}
		}
		switch c := s[j]; {
		case c == '"' && key:
			return append(dst, '"', ':'), j + 1, true
		case c == '"':
			return append(dst, '"'), j + 1, true
		case c == '\\' && !key:
			dst, j, ok := appendUnescaped(dst, s, j, true)
			return append(dst, '"'), j, ok
		case c < 0x20 || c == '\\':
			return dst, j, false
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 {
			return dst, j, false
		}
		dst = append(dst, s[j:j+size]...)
		j += size
	}
}

// plainEnd is specialBytes in fewer operations, exact for the lowest flagged
// byte only (TestPlainEnd): once bytes of 0x80 and up are flagged the other
// tests need not exclude them, as a subtraction borrows only from a byte of
// the class.
func plainEnd(w uint64) uint64 {
	// (In Go '-' and '|' bind alike: each difference is bracketed.)
	return ((w - lsb*0x20) | ((w ^ (lsb * '"')) - lsb) | ((w ^ (lsb * '\\')) - lsb) | w) & msb
}

func appendRune(dst []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if e := escapes[r]; e == 'u' {
			return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
		} else if e != 0 {
			return append(dst, '\\', e)
		}
		return append(dst, byte(r))
	}
	return utf8.AppendRune(dst, r)
}

func (f *fastCanon) array(dst []byte, i int) ([]byte, int, bool) {
	if f.depth >= f.maxDepth {
		return dst, i, false
	}
	f.depth++
	s := f.src
	dst = append(dst, '[')
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		f.depth--
		return append(dst, ']'), i + 1, true
	}
	for {
		var ok bool
		if i < len(s) && s[i] == '"' { // as in object
			dst, i, ok = copyString(dst, s, i, false)
		} else {
			dst, i, ok = f.value(dst, i)
		}
		if !ok {
			return dst, i, false
		}
		if i = skipWS(s, i); i >= len(s) {
			return dst, i, false
		}
		switch s[i] {
		case ',':
			dst = append(dst, ',')
			i = skipWS(s, i+1)
		case ']':
			f.depth--
			return append(dst, ']'), i + 1, true
		default:
			return dst, i, false
		}
	}
}

// object writes the object at s[i], members in canonical order.
func (f *fastCanon) object(dst []byte, i int) ([]byte, int, bool) {
	if f.depth >= f.maxDepth {
		return dst, i, false
	}
	f.depth++
	omitHere := f.omitting && f.depth == 1
	s := f.src
	open := len(dst)
	dst = append(dst, '{')
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		f.depth--
		return append(dst, '}'), i + 1, true
	}
	// Kept members are pushed on f.spans; duplicates are found once sorted.
	base := len(f.spans)
	members, sorted, omitted := 0, true, false
	for {
		if i >= len(s) || s[i] != '"' || members >= dupMapAt-1 {
			return dst, i, false
		}
		members++
		comma := len(dst)
		if len(f.spans) > base {
			dst = append(dst, ',')
		}
		start := len(dst)
		var end int
		var rank uint64
		var ok bool
		// A key of up to 15 plain bytes (most) is written with its quotes
		// and colon from two words, without a loop.
		if n := len(dst); i+17 <= len(s) && n+18 <= cap(dst) {
			src := s[i+1 : i+17]
			w1, w2 := load8(src, 0), load8(src, 8)
			k1 := bits.TrailingZeros64(plainEnd(w1)) >> 3
			k := k1 + bits.TrailingZeros64(plainEnd(w2))>>3&-(k1>>3)
			if end = i + 1 + k; k < 16 && s[end] == '"' {
				d := dst[n : n+18]
				d[0] = '"'
				binary.LittleEndian.PutUint64(d[1:9], w1)
				binary.LittleEndian.PutUint64(d[9:17], w2)
				d[1+k], d[2+k] = '"', ':'
				dst = dst[:n+3+k]
				// keyRank of ASCII (k < 16, so k&15 is k).
				rank, ok = bits.ReverseBytes64(w1&keyMask[k&15]), true
			}
		}
		if !ok {
			if dst, end, ok = copyString(dst, s, i, true); !ok {
				return dst, end, false
			}
			end-- // its closing quote
			rank = rankAt(s, i+1, end-i-1)
		}
		key := i + 1 // the key is s[key:end]
		if i = end + 1; i+2 < len(s) && s[i+2] > ' ' && s[i] == ':' && s[i+1] == ' ' {
			i += 2 // the colon of indented JSON
		} else {
			if i = skipWS(s, i); i >= len(s) || s[i] != ':' {
				return dst, i, false
			}
			i = skipWS(s, i+1)
		}
		if i < len(s) && s[i] == '"' { // most values are strings
			dst, i, ok = copyString(dst, s, i, false)
		} else {
			dst, i, ok = f.value(dst, i)
		}
		if !ok {
			return dst, i, false
		}
		if omitHere && s[key:end] == f.omit {
			if omitted {
				return dst, i, false // a duplicate
			}
			omitted = true
			dst = dst[:comma]
		} else {
			sp := fastSpan{rank: rank, key: int32(key), keyLen: int32(end - key), start: int32(start), end: int32(len(dst))}
			if n := len(f.spans); sorted && n > base {
				if prev := &f.spans[n-1]; sp.rank <= prev.rank {
					switch compareRanked(sp.rank, prev.rank, s[key:end], f.keyOf(prev)) {
					case 0:
						return dst, i, false // a duplicate
					case -1:
						sorted = false
					}
				}
			}
			f.spans = append(f.spans, sp)
		}
		if i = skipWS(s, i); i >= len(s) {
			return dst, i, false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
			continue
		case '}':
			i++
		default:
			return dst, i, false
		}
		break
	}
	if !sorted {
		var ok bool
		if dst, ok = f.order(dst, open+1, f.spans[base:]); !ok {
			return dst, i, false
		}
	}
	f.spans = f.spans[:base]
	f.depth--
	return append(dst, '}'), i, true
}

// order rewrites the members at dst[body:] in canonical order (sorting
// spans), or reports false for a duplicate key.
func (f *fastCanon) order(dst []byte, body int, spans []fastSpan) ([]byte, bool) {
	if len(spans) <= sortInPlaceMax {
		// An insertion sort, on the ranks but for ties.
		for k := 1; k < len(spans); k++ {
			sp := spans[k]
			j := k
			for ; j > 0; j-- {
				prev := &spans[j-1]
				if sp.rank > prev.rank || sp.rank == prev.rank && !f.less(&sp, prev) {
					break
				}
				spans[j] = *prev
			}
			spans[j] = sp
		}
	} else {
		f.sortSpans(spans)
	}
	for k := 1; k < len(spans); k++ {
		if a, b := &spans[k-1], &spans[k]; a.rank == b.rank && f.keyOf(a) == f.keyOf(b) {
			return dst, false
		}
	}
	// Reordered, the body keeps its length: rewritten in place from a copy.
	tmp := append(f.tmp[:0], dst[body:]...)
	f.tmp = tmp
	w := body
	for k := range spans {
		if k > 0 {
			dst[w] = ','
			w++
		}
		sp := &spans[k]
		w += copy(dst[w:], tmp[int(sp.start)-body:int(sp.end)-body])
	}
	return dst, true
}

func (f *fastCanon) sortSpans(spans []fastSpan) {
	slices.SortFunc(spans, func(a, b fastSpan) int {
		return compareRanked(a.rank, b.rank, f.keyOf(&a), f.keyOf(&b))
	})
}
