package jcs

import "math/bits"

// Word-at-a-time scanning: eight bytes tested with a few integer operations.
// A word is flagged iff it holds a byte of the class, and the lowest flagged
// byte is the first of the class (a subtraction only borrows upwards, so
// false flags appear only above a true one).

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load8 returns s[i:i+8] as a little-endian word, in one load.
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hasZero is nonzero if a byte of x is 0.
func hasZero(x uint64) uint64 { return (x - lsb) & ^x & msb }

// escapeBytes is nonzero if a byte of w is < 0x20, '"' or '\\'.
func escapeBytes(w uint64) uint64 {
	return (w-lsb*0x20)&^w&msb | hasZero(w^(lsb*'"')) | hasZero(w^(lsb*'\\'))
}

// specialBytes is escapeBytes or a byte of a multi-byte UTF-8 sequence.
func specialBytes(w uint64) uint64 { return escapeBytes(w) | w&msb }

// nonZeroBytes flags (with 0x80) exactly the nonzero bytes of x.
func nonZeroBytes(x uint64) uint64 {
	const low7 = lsb * 0x7f
	return ((x & low7) + low7 | x) & msb
}

// skipPlain returns the index of the first special byte of s from i, or len(s).
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

// skipUnescaped returns the index of the first byte of s from i that RFC 8785
// escapes, or len(s).
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
