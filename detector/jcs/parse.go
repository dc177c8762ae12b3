package jcs

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Default limits, used where a Limits field is zero or negative.
const (
	DefaultMaxBytes = 1 << 20 // 1 MiB
	DefaultMaxDepth = 64
)

// Limits bound the work Parse does on one document, so that a hostile input
// costs bounded time, memory and stack.
type Limits struct {
	// MaxBytes is the longest input accepted, in bytes (whitespace included).
	// Zero or negative means DefaultMaxBytes.
	MaxBytes int
	// MaxDepth is the deepest nesting of arrays and objects accepted: "1" has
	// depth 0, "[1]" depth 1, "{"a":[1]}" depth 2. Zero or negative means
	// DefaultMaxDepth.
	MaxDepth int
}

func (l Limits) maxBytes() int {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

func (l Limits) maxDepth() int {
	if l.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return l.MaxDepth
}

// Parse parses one RFC 8259 JSON text into a Value tree. Whitespace around the
// value is allowed; anything else after it is an error.
//
// Parse is strict: it accepts exactly the RFC 8259 grammar in valid UTF-8,
// and additionally rejects what RFC 8785 cannot canonicalize (duplicate keys,
// escaped lone surrogates, numbers outside the float64 range). Every error it
// returns is a *SyntaxError wrapping one of ErrNotJSON, ErrDuplicateKey,
// ErrInvalidUTF8, ErrTooLarge or ErrTooDeep.
//
// Strings in the tree are decoded; numbers keep their literal as written. The
// returned tree shares no memory with data.
func Parse(data []byte, lim Limits) (Value, error) {
	if err := checkSize(data, lim); err != nil {
		return Value{}, err
	}
	p := getParser(string(data), lim.maxDepth(), false)
	defer p.release()
	return p.document()
}

// ParseObject is Parse for documents that must be a JSON object, such as an
// agent card. Besides the errors of Parse it returns a *SyntaxError wrapping
// ErrNotObject when the input is well-formed JSON of another kind.
func ParseObject(data []byte, lim Limits) (Value, error) {
	v, err := Parse(data, lim)
	if err != nil {
		return Value{}, err
	}
	if v.Kind != Object {
		return Value{}, notObject(data, v.Kind)
	}
	return v, nil
}

func checkSize(data []byte, lim Limits) error {
	if max := lim.maxBytes(); len(data) > max {
		return &SyntaxError{Offset: max, Detail: fmt.Sprintf("%d bytes, limit %d", len(data), max), Err: ErrTooLarge}
	}
	return nil
}

func notObject(data []byte, k Kind) error {
	off := 0
	for off < len(data) && isSpace(data[off]) {
		off++
	}
	return &SyntaxError{Offset: off, Detail: "top-level value is " + k.String(), Err: ErrNotObject}
}

// parser is the state of one parse. Children of the array or object being
// parsed are pushed on the elems and members stacks; when the container
// closes they are copied into exactly sized slices carved from slabs, so a
// document costs a handful of allocations rather than one per container.
// Parsers are pooled: the stacks and scratch buffers are reused by every
// parse; the slabs belong to the tree returned.
type parser struct {
	src      string
	pos      int
	maxDepth int
	depth    int

	elems   []Value  // stack of array elements being collected
	members []Member // stack of object members being collected

	valueSlab  []Value  // unused rest of the current slab
	memberSlab []Member // unused rest of the current slab

	buf     []byte // scratch for unescaping strings
	escaped bool   // whether the last string read had escapes

	// state of the streaming canonicalizer (canon.go)
	spans    []span // stack of the members of the objects being written
	tmp      []byte // scratch for reordering members
	omit     string // top-level member to leave out, if omitting
	omitting bool

	// internal is set when no string read leaves the package before
	// release (AppendCanonical): unescaped strings then live in arena,
	// which only grows until release, instead of being allocated.
	internal bool
	arena    []byte
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

// Bounds on what a pooled parser keeps between parses, so that one huge
// document does not pin its working memory for good.
const (
	maxPooledStack = 4096
	maxPooledBuf   = 64 << 10
)

// getParser returns a pooled parser ready to parse src. internal says whether
// the strings it reads stay inside the package until release.
func getParser(src string, maxDepth int, internal bool) *parser {
	p := parserPool.Get().(*parser)
	p.src, p.pos, p.maxDepth, p.depth = src, 0, maxDepth, 0
	p.internal = internal
	p.arena = p.arena[:0]
	return p
}

// release drops every reference into the parsed document and returns p to
// the pool. Strings read with internal set must no longer be used.
func (p *parser) release() {
	p.src = ""
	// The slabs belong to the tree returned; the stacks are non-empty after
	// an error.
	p.valueSlab, p.memberSlab = nil, nil
	clear(p.elems)
	clear(p.members)
	clear(p.spans)
	p.elems, p.members, p.spans = p.elems[:0], p.members[:0], p.spans[:0]
	p.omit, p.omitting = "", false
	if cap(p.elems) > maxPooledStack {
		p.elems = nil
	}
	if cap(p.members) > maxPooledStack {
		p.members = nil
	}
	if cap(p.spans) > maxPooledStack {
		p.spans = nil
	}
	if cap(p.tmp) > maxPooledBuf {
		p.tmp = nil
	}
	if cap(p.buf) > maxPooledBuf {
		p.buf = nil
	}
	if cap(p.arena) > maxPooledBuf {
		p.arena = nil
	}
	parserPool.Put(p)
}

// pushElem and pushMember grow the stacks by doubling: the runtime grows
// large slices by about a quarter, which for a hostile flat array of a
// million elements would allocate several times the stack's final size.
func (p *parser) pushElem(v Value) {
	if len(p.elems) == cap(p.elems) {
		p.elems = append(make([]Value, 0, max(2*cap(p.elems), 16)), p.elems...)
	}
	p.elems = append(p.elems, v)
}

func (p *parser) pushMember(m Member) {
	if len(p.members) == cap(p.members) {
		p.members = append(make([]Member, 0, max(2*cap(p.members), 16)), p.members...)
	}
	p.members = append(p.members, m)
}

func (p *parser) document() (Value, error) {
	p.skipSpace()
	if p.pos == len(p.src) {
		return Value{}, p.fail(p.pos, ErrNotJSON, "no value")
	}
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return Value{}, p.unexpected("after the top-level value")
	}
	return v, nil
}

func (p *parser) fail(off int, sentinel error, format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: off, Detail: fmt.Sprintf(format, args...), Err: sentinel}
}

// unexpected reports the byte at p.pos, or the end of input.
func (p *parser) unexpected(where string) error {
	if p.pos >= len(p.src) {
		return p.fail(p.pos, ErrNotJSON, "unexpected end of input")
	}
	rest := p.src[p.pos:]
	c := rest[0]
	switch {
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRuneInString(rest)
		if r == utf8.RuneError && size <= 1 {
			return p.fail(p.pos, ErrInvalidUTF8, "byte %#02x", c)
		}
		return p.fail(p.pos, ErrNotJSON, "unexpected %q %s", r, where)
	case strings.HasPrefix(rest, "NaN"), strings.HasPrefix(rest, "Infinity"), strings.HasPrefix(rest, "-Infinity"):
		return p.fail(p.pos, ErrNotJSON, "NaN and Infinity are not JSON numbers")
	default:
		return p.fail(p.pos, ErrNotJSON, "unexpected %q %s", c, where)
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// skipSpace advances past whitespace. Indented documents have long runs of
// spaces, which are skipped eight at a time.
func (p *parser) skipSpace() {
	s, i := p.src, p.pos
	for i < len(s) {
		switch s[i] {
		case ' ':
			if i+8 <= len(s) {
				if m := nonZeroBytes(load8(s, i) ^ (lsb * ' ')); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
				} else {
					i += 8
				}
				continue
			}
			i++
		case '\n', '\r', '\t':
			i++
		default:
			p.pos = i
			return
		}
	}
	p.pos = i
}

// value parses the value starting at p.pos (no leading whitespace).
func (p *parser) value() (Value, error) {
	if p.pos >= len(p.src) {
		return Value{}, p.unexpected("")
	}
	switch c := p.src[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, err := p.string()
		return Value{Kind: String, Str: s}, err
	case 't':
		return p.literal("true", True)
	case 'f':
		return p.literal("false", False)
	case 'n':
		return p.literal("null", Null)
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return p.number()
		}
		return Value{}, p.unexpected("where a value was expected")
	}
}

func (p *parser) literal(word string, k Kind) (Value, error) {
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return Value{}, p.unexpected("where a value was expected")
	}
	p.pos += len(word)
	return Value{Kind: k}, nil
}

func (p *parser) enter() error {
	if p.depth >= p.maxDepth {
		return p.fail(p.pos, ErrTooDeep, "nesting deeper than %d", p.maxDepth)
	}
	p.depth++
	p.pos++ // the '[' or '{'
	p.skipSpace()
	return nil
}

func (p *parser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.depth--
		return Value{Kind: Array}, nil
	}
	base := len(p.elems)
	for {
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.pushElem(v)
		p.skipSpace()
		if p.pos < len(p.src) {
			if c := p.src[p.pos]; c == ',' {
				p.pos++
				p.skipSpace()
				continue
			} else if c == ']' {
				p.pos++
				break
			}
		}
		return Value{}, p.unexpected("in array, expected ',' or ']'")
	}
	elems := p.allocValues(len(p.elems) - base)
	copy(elems, p.elems[base:])
	clear(p.elems[base:])
	p.elems = p.elems[:base]
	p.depth--
	return Value{Kind: Array, Elems: elems}, nil
}

// dupMapAt is the member count from which duplicate keys are found with a
// map rather than by comparing against every earlier key, so that an object
// with very many members costs O(n), not O(n²). Below it the comparisons
// (at most 2016, mostly of string lengths) are cheaper than a map.
const dupMapAt = 64

func (p *parser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.depth--
		return Value{Kind: Object}, nil
	}
	base := len(p.members)
	var seen map[string]struct{}
	for {
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return Value{}, p.unexpected("in object, expected a string key")
		}
		keyOff := p.pos
		key, err := p.string()
		if err != nil {
			return Value{}, err
		}
		if seen != nil {
			if _, dup := seen[key]; dup {
				return Value{}, p.fail(keyOff, ErrDuplicateKey, "key %s", quote(key))
			}
			seen[key] = struct{}{}
		} else {
			for i := base; i < len(p.members); i++ {
				if p.members[i].Key == key {
					return Value{}, p.fail(keyOff, ErrDuplicateKey, "key %s", quote(key))
				}
			}
			if len(p.members)-base+1 == dupMapAt {
				seen = make(map[string]struct{}, 2*dupMapAt)
				for i := base; i < len(p.members); i++ {
					seen[p.members[i].Key] = struct{}{}
				}
				seen[key] = struct{}{}
			}
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return Value{}, p.unexpected("in object, expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.pushMember(Member{Key: key, Value: v})
		p.skipSpace()
		if p.pos < len(p.src) {
			if c := p.src[p.pos]; c == ',' {
				p.pos++
				p.skipSpace()
				continue
			} else if c == '}' {
				p.pos++
				break
			}
		}
		return Value{}, p.unexpected("in object, expected ',' or '}'")
	}
	members := p.allocMembers(len(p.members) - base)
	copy(members, p.members[base:])
	clear(p.members[base:])
	p.members = p.members[:base]
	p.depth--
	return Value{Kind: Object, Members: members}, nil
}

// Slab sizing: the first slab is sized from the input length (real cards
// hold roughly one member per 40 bytes and one array element per 100), later
// ones double, and a container larger than a slab gets its own allocation.
const (
	minSlab = 8
	maxSlab = 1024
)

func slabSize(estimate, prev int) int {
	n := max(estimate, 2*prev, minSlab)
	return min(n, maxSlab)
}

func (p *parser) allocValues(n int) []Value {
	if n > len(p.valueSlab) {
		size := slabSize(len(p.src)/128, cap(p.valueSlab))
		if n > size/2 {
			return make([]Value, n)
		}
		p.valueSlab = make([]Value, size)
	}
	s := p.valueSlab[:n:n]
	p.valueSlab = p.valueSlab[n:]
	return s
}

func (p *parser) allocMembers(n int) []Member {
	if n > len(p.memberSlab) {
		size := slabSize(len(p.src)/48, cap(p.memberSlab))
		if n > size/2 {
			return make([]Member, n)
		}
		p.memberSlab = make([]Member, size)
	}
	s := p.memberSlab[:n:n]
	p.memberSlab = p.memberSlab[n:]
	return s
}

// plain marks the ASCII bytes that stand for themselves inside a string:
// everything from 0x20 up except '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// string parses the string starting at p.pos (the opening quote) and returns
// it decoded. A string without escapes is a substring of the input.
func (p *parser) string() (string, error) {
	s := p.src
	start := p.pos + 1
	i := start
	for {
		if i = skipPlain(s, i); i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.escaped = false
			return s[start:i], nil
		case c == '\\':
			p.escaped = true
			return p.unescape(start, i)
		case c < 0x20:
			return "", p.fail(i, ErrNotJSON, "control character %#02x in string", c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail(i, ErrInvalidUTF8, "byte %#02x in string", c)
			}
			i += size
		}
	}
	return "", p.fail(len(s), ErrNotJSON, "unterminated string")
}

// unescape decodes the string that starts at start and whose first escape is
// at i.
func (p *parser) unescape(start, i int) (string, error) {
	s := p.src
	buf, off := p.buf[:0], 0
	if p.internal {
		buf, off = p.arena, len(p.arena)
	}
	buf = append(buf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case plain[c]:
			buf = append(buf, c)
			i++
		case c == '"':
			p.pos = i + 1
			if p.internal {
				// The arena only grows until release, so earlier strings
				// keep pointing at bytes that do not change.
				p.arena = buf
				return unsafe.String(&buf[off], len(buf)-off), nil
			}
			p.buf = buf
			return string(buf), nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", p.fail(len(s), ErrNotJSON, "unterminated string")
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return "", p.fail(i, ErrNotJSON, "invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					var lo rune
					if r < 0xDC00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
						lo, ok = hex4(s, i+8)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return "", p.fail(i, ErrInvalidUTF8, "lone surrogate %s", s[i:i+6])
					}
					r = utf16.DecodeRune(r, lo)
					i += 6
				}
				buf = utf8.AppendRune(buf, r)
				i += 6
				continue
			default:
				return "", p.fail(i, ErrNotJSON, "invalid escape %q", s[i:i+2])
			}
			i += 2
		case c < 0x20:
			return "", p.fail(i, ErrNotJSON, "control character %#02x in string", c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail(i, ErrInvalidUTF8, "byte %#02x in string", c)
			}
			buf = append(buf, s[i:i+size]...)
			i += size
		}
	}
	return "", p.fail(len(s), ErrNotJSON, "unterminated string")
}

// hex4 decodes the four hex digits at s[i:i+4].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (p *parser) number() (Value, error) {
	end, detail := scanNumber(p.src, p.pos)
	if detail != "" {
		return Value{}, p.fail(end, ErrNotJSON, "%s", detail)
	}
	lit := p.src[p.pos:end]
	if !isShortInt(lit) {
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			return Value{}, p.fail(p.pos, ErrNotJSON, "number %s out of range", quote(lit))
		}
	}
	p.pos = end
	return Value{Kind: Number, Str: lit}, nil
}

// scanNumber matches the RFC 8259 number grammar at s[i:]
//
//	number = [ "-" ] ( "0" / digit1-9 *DIGIT ) [ "." 1*DIGIT ] [ ( "e" / "E" ) [ "-" / "+" ] 1*DIGIT ]
//
// and returns where it ends, or where it fails and why.
func scanNumber(s string, i int) (end int, detail string) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s):
		return i, "unexpected end of number"
	case s[i] == '0':
		i++
		if i < len(s) && isDigit(s[i]) {
			return i, "leading zero in number"
		}
	case isDigit(s[i]):
		i = digits(s, i)
	case strings.HasPrefix(s[i:], "Infinity"):
		return i, "NaN and Infinity are not JSON numbers"
	default:
		return i, "invalid number"
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return i, "no digit after decimal point"
		}
		i = digits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return i, "no digit in exponent"
		}
		i = digits(s, i)
	}
	return i, ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// isShortInt reports whether lit (a valid JSON number) is an integer of at
// most 15 digits other than "-0". Such a literal is exact in float64 and is
// already its own canonical form.
func isShortInt(lit string) bool {
	d := lit
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
		if d == "0" {
			return false
		}
	}
	if len(d) == 0 || len(d) > 15 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if !isDigit(d[i]) {
			return false
		}
	}
	return len(d) == 1 || d[0] != '0'
}
