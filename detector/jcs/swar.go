package jcs

// Word-at-a-time scanning of strings: eight bytes are tested with a few
// integer operations instead of eight table lookups. The tests are exact:
// a word is reported as holding a byte of a class if and only if it does.

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
