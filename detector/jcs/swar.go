package jcs

import "math/bits"

// Word-at-a-time scanning: eight bytes are tested with a few integer
// operations instead of eight table lookups. The tests are exact where it
// matters: a word is reported as holding a byte of a class if and only if it
// does, and the lowest flagged byte is the first byte of the class (a
// subtraction can only borrow upwards, so false flags appear only above a
// true one).

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load8 returns s[i:i+8] as a little-endian word; the compiler turns it into
// a single load.
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hasZero is nonzero if a byte of x is 0.
func hasZero(x uint64) uint64 { return (x - lsb) & ^x & msb }

// escapeBytes is nonzero if a byte of w must be escaped in a JSON string:
// a control character (< 0x20), '"' or '\\'.
func escapeBytes(w uint64) uint64 {
	return (w-lsb*0x20)&^w&msb | hasZero(w^(lsb*'"')) | hasZero(w^(lsb*'\\'))
}

// specialBytes is nonzero if a byte of w is not plain ASCII inside a string:
// a byte escapeBytes reports, or a byte of a multi-byte UTF-8 sequence.
func specialBytes(w uint64) uint64 { return escapeBytes(w) | w&msb }

// nonZeroBytes flags (with 0x80) exactly the nonzero bytes of x.
func nonZeroBytes(x uint64) uint64 {
	const low7 = lsb * 0x7f
	return ((x & low7) + low7 | x) & msb
}

// skipPlain returns the index of the first byte of s at or after i that is
// not plain ASCII inside a string (see specialBytes), or len(s).
func skipPlain(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := specialBytes(load8(s, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(s) && plain[s[i]] {
		i++
	}
	return i
}

// skipUnescaped returns the index of the first byte of s at or after i that
// RFC 8785 escapes (see escapeBytes), or len(s).
func skipUnescaped(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if m := escapeBytes(load8(s, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(s) && escapes[s[i]] == 0 {
		i++
	}
	return i
}
