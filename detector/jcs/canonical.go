package jcs

import (
	"slices"
	"unsafe"
)

// Append appends the RFC 8785 canonical form of v to dst; v is not modified.
// A hand-built tree is taken as valid UTF-8 with distinct keys; a Number that
// is not a finite JSON number, or an unknown Kind, is written as null.
func Append(dst []byte, v *Value) []byte {
	switch v.Kind {
	case False:
		return append(dst, "false"...)
	case True:
		return append(dst, "true"...)
	case Number:
		return appendNumber(dst, v.Str)
	case String:
		return appendString(dst, v.Str)
	case Array:
		dst = append(dst, '[')
		for i := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, &v.Elems[i])
		}
		return append(dst, ']')
	case Object:
		return appendObject(dst, v.Members, "", false)
	default: // Null, or not a Kind
		return append(dst, "null"...)
	}
}

// AppendWithout is Append leaving out the top-level member named key, as
// card digests and signing leave out "signatures".
func AppendWithout(dst []byte, v *Value, key string) []byte {
	if v.Kind != Object {
		return Append(dst, v)
	}
	return appendObject(dst, v.Members, key, true)
}

// sortInPlaceMax is the member count up to which objects are ordered by an
// insertion sort over a stack array (no allocation).
const sortInPlaceMax = 32

func appendObject(dst []byte, ms []Member, omit string, omitting bool) []byte {
	var small [sortInPlaceMax]int32
	var order []int32
	if len(ms) <= len(small) {
		order = small[:0]
	} else {
		order = make([]int32, 0, len(ms))
	}
	for i := range ms {
		if omitting && ms[i].Key == omit {
			continue
		}
		order = append(order, int32(i))
	}
	if len(order) <= sortInPlaceMax {
		for i := 1; i < len(order); i++ {
			for j := i; j > 0 && compareKeys(ms[order[j]].Key, ms[order[j-1]].Key) < 0; j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
	} else {
		sortLarge(ms, order)
	}
	dst = append(dst, '{')
	for n, i := range order {
		if n > 0 {
			dst = append(dst, ',')
		}
		m := &ms[i]
		dst = appendString(dst, m.Key)
		dst = append(dst, ':')
		dst = Append(dst, &m.Value)
	}
	return append(dst, '}')
}

// sortLarge is apart so that the closure does not make appendObject's stack
// array escape.
//
//go:noinline
func sortLarge(ms []Member, order []int32) {
	slices.SortFunc(order, func(a, b int32) int { return compareKeys(ms[a].Key, ms[b].Key) })
}

// compareKeys orders valid UTF-8 by UTF-16 code units (RFC 8785 §3.2.3).
// UTF-8 byte order is that but where U+E000..U+FFFF (lead 0xEE, 0xEF) meets a
// supplementary character (lead 0xF0..0xF4, in UTF-16 a surrogate pair that
// sorts first); a first difference in a continuation byte is in characters
// of one lead byte, where byte order is right.
func compareKeys(a, b string) int {
	// Most keys differ in their first byte, below 0xEE.
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] && a[0] < 0xEE && b[0] < 0xEE {
		if a[0] < b[0] {
			return -1
		}
		return 1
	}
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x >= 0xEE && y >= 0xEE {
			if xs, ys := x >= 0xF0, y >= 0xF0; xs != ys {
				if xs {
					return -1
				}
				return 1
			}
		}
		if x < y {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

const hexDigits = "0123456789abcdef"

// escapes holds the second character of each byte's escape ('u': \u00xx).
var escapes = func() (t [256]byte) {
	for c := 0; c < 0x20; c++ {
		t[c] = 'u'
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = 'b', 'f', 'n', 'r', 't'
	t['"'], t['\\'] = '"', '\\'
	return t
}()

// appendString appends s as an RFC 8785 string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for {
		i := skipUnescaped(s, start)
		dst = append(dst, s[start:i]...)
		if i == len(s) {
			return append(dst, '"')
		}
		e := escapes[s[i]]
		if e == 'u' {
			c := s[i]
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		} else {
			dst = append(dst, '\\', e)
		}
		start = i + 1
	}
}

// Options control AppendCanonical.
type Options struct {
	Limits        Limits
	Omit          string // a top-level member to leave out, as AppendWithout
	RequireObject bool   // another top-level value is ErrNotObject
}

// Transform returns the canonical form of data under the default Limits, or
// the errors of Parse.
func Transform(data []byte) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(data)+8), data, Options{}) // the room appendFast makes
}

// AppendCanonical appends to dst what Append (AppendWithout with opt.Omit)
// writes for the tree Parse returns, mostly without building it (fast.go).
// data is only read during the call; dst must not overlap it. On error it
// returns dst (bytes past its length may be written) and the errors of Parse
// (of ParseObject with opt.RequireObject).
func AppendCanonical(dst, data []byte, opt Options) ([]byte, error) {
	if err := checkSize(data, opt.Limits); err != nil {
		return dst, err
	}
	// data is not written during the call: strings may alias it.
	src := unsafe.String(unsafe.SliceData(data), len(data))
	out, ok := dst, false
	if len(dst)+len(data) <= fastMaxBytes {
		out, ok = appendFast(dst, src, opt.Limits.maxDepth(), opt.Omit)
	}
	if ok && (!opt.RequireObject || out[len(dst)] == '{') {
		return out, nil
	}
	// out[:len(dst)] is dst, perhaps moved.
	out, err := appendTree(out[:len(dst)], data, opt)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendTree is AppendCanonical through Parse and Append: the fast path's
// fallback and oracle.
func appendTree(dst, data []byte, opt Options) ([]byte, error) {
	v, err := Parse(data, opt.Limits)
	if err != nil {
		return dst, err
	}
	if opt.RequireObject && v.Kind != Object {
		return dst, notObject(data, v.Kind)
	}
	if opt.Omit != "" {
		return AppendWithout(dst, &v, opt.Omit), nil
	}
	return Append(dst, &v), nil
}
