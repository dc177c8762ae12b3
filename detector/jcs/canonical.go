package jcs

import (
	"slices"
	"unsafe"
)

// Append appends the RFC 8785 canonical form of v to dst and returns the
// extended buffer. It does not modify v: object members are written in
// sorted order without being reordered in the tree.
//
// Append cannot fail on a tree built by Parse. For a hand-built tree it
// assumes strings are valid UTF-8 (invalid bytes are copied through) and the
// keys of an object distinct (a repeated key is written twice), and it writes
// a Number whose Str is not a finite JSON number, or an unknown Kind, as
// null. Recursion follows the depth of the tree.
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

// AppendWithout is Append leaving out the top-level member named key when v is
// an object, as A2A card signing and digests leave out "signatures". Members
// of that name deeper in the tree are kept.
func AppendWithout(dst []byte, v *Value, key string) []byte {
	if v.Kind != Object {
		return Append(dst, v)
	}
	return appendObject(dst, v.Members, key, true)
}

// sortInPlaceMax is the member count up to which objects are ordered with an
// insertion sort over a stack array of indices (no allocation); real cards
// rarely have more than a dozen members per object.
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

// sortLarge is kept apart so that the closure does not make the stack array
// in appendObject escape.
//
//go:noinline
func sortLarge(ms []Member, order []int32) {
	slices.SortFunc(order, func(a, b int32) int { return compareKeys(ms[a].Key, ms[b].Key) })
}

// compareKeys orders two valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 §3.2.3 requires. Byte order of UTF-8 is code point order, which is
// UTF-16 order except where a character in U+E000..U+FFFF (lead byte 0xEE or
// 0xEF) meets a supplementary one (lead byte 0xF0..0xF4): in UTF-16 the
// latter is a surrogate pair starting at 0xD800..0xDBFF and sorts first. The
// first differing byte of two valid UTF-8 strings is either in a lead byte
// of both, where that is decided, or in a continuation byte of two
// characters of the same length and lead byte, where byte order is right.
func compareKeys(a, b string) int {
	// Most keys differ in their first byte, and below 0xEE byte order is
	// UTF-16 order.
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

// escapes holds, for each byte that RFC 8785 escapes, the second character
// of its two-character escape, or 'u' for \u00xx.
var escapes = func() (t [256]byte) {
	for c := 0; c < 0x20; c++ {
		t[c] = 'u'
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = 'b', 'f', 'n', 'r', 't'
	t['"'], t['\\'] = '"', '\\'
	return t
}()

// appendString appends s as an RFC 8785 string: '"' and '\\' escaped,
// control characters as \b \f \n \r \t or \u00xx (lowercase hex), everything
// else as literal UTF-8.
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
	Limits Limits
	// Omit names a top-level object member to leave out of the output, as A2A
	// card signing leaves out "signatures". Empty omits nothing.
	Omit string
	// RequireObject makes a top-level value other than an object an error
	// wrapping ErrNotObject.
	RequireObject bool
}

// Transform returns the RFC 8785 canonical form of the JSON text data, parsed
// under the default Limits. It returns the errors of Parse.
func Transform(data []byte) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(data)+8), data, Options{}) // the room appendFast makes
}

// AppendCanonical parses data as Parse does and appends its canonical form to
// dst: the bytes Append(dst, &v) would write for the tree v that Parse
// returns (AppendWithout when opt.Omit is set). For the common card it
// builds no tree and allocates nothing beyond what dst needs to grow (see
// fast.go). data is only read, and only during the call; dst must not
// overlap it.
//
// On error it returns dst (its length unchanged; bytes past it may have been
// written) and the errors of Parse, or of ParseObject when opt.RequireObject
// is set. It is safe for concurrent use.
func AppendCanonical(dst, data []byte, opt Options) ([]byte, error) {
	if err := checkSize(data, opt.Limits); err != nil {
		return dst, err
	}
	// Strings are only used during the call and data is not written
	// during it, so they may alias data rather than copy it.
	src := unsafe.String(unsafe.SliceData(data), len(data))
	out, ok := dst, false
	if len(dst)+len(data) <= fastMaxBytes {
		out, ok = appendFast(dst, src, opt.Limits.maxDepth(), opt.Omit)
	}
	if ok && (!opt.RequireObject || out[len(dst)] == '{') {
		return out, nil
	}
	// out[:len(dst)] is dst, perhaps moved to a larger buffer. A value that
	// is not a required object goes to the tree path for its error.
	out, err := appendTree(out[:len(dst)], data, opt)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendTree is AppendCanonical through Parse and Append, for what the
// fast path does not handle: it writes the output, or finds the error. It
// is the oracle the fast path is tested against (FuzzFastCanonical).
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
