package jcs

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Scanner reads one JSON text value by value under the rules of Parse. Value
// reads a scalar or enters an array or object, which the caller walks with
// NextElem or NextKey or passes over with Skip; End checks the rest is space:
//
//	var s jcs.Scanner
//	if err := s.Reset(data, jcs.Limits{}); err != nil { ... }
//	kind, text, err := s.Value() // for an object, then:
//	for {
//		key, ok, err := s.NextKey()
//		if err != nil || !ok { ... }
//		kind, text, err := s.Value()
//		...
//	}
//	err = s.End()
//
// Errors are those of Parse, at the same offsets; after one, Reset before
// reuse. Unlike Parse, it accepts numbers outside float64. Strings may share
// memory with the data. The zero Scanner is ready for Reset, and keeps its
// buffers from one Reset to the next. Not safe for concurrent use.
type Scanner struct {
	src      string
	pos      int
	maxDepth int

	// The innermost open array or object (at the top level: none).
	more    bool // an element or member of it has been started
	keyBase int  // index in keys of its first key; -1 for an array

	frames []frame    // the enclosing arrays and objects, outermost first
	keys   []string   // keys read so far in the open objects
	keysHW int        // how far keys has reached since the last reset
	seen   []seenKeys // key sets of the open objects of dupMapAt members or more

	buf     []byte // scratch for unescaping strings
	escaped bool   // whether the last string read had escapes
}

// frame is Scanner.more and keyBase of an enclosing array or object.
type frame struct {
	more    bool
	keyBase int
}

// dupMapAt is the member count from which duplicate keys are found with a
// map, so that a huge object costs O(n), not O(n²); below it comparing (at
// most 2016, mostly of lengths) is cheaper.
const dupMapAt = 64

// seenKeys are the keys of the open object at keyBase.
type seenKeys struct {
	keyBase int
	keys    map[string]struct{}
}

// Bounds on what is kept between documents, so that one huge document does
// not pin its working memory for good.
const (
	maxPooledStack = 4096
	maxPooledBuf   = 64 << 10
)

// Reset makes s ready to scan data under lim (ErrTooLarge past MaxBytes).
// Reset(nil, Limits{}) drops every reference to earlier data.
func (s *Scanner) Reset(data []byte, lim Limits) error {
	if err := checkSize(data, lim); err != nil {
		s.reset("", 0)
		return err
	}
	s.reset(unsafe.String(unsafe.SliceData(data), len(data)), lim.maxDepth())
	s.skipSpace()
	return nil
}

func (s *Scanner) reset(src string, maxDepth int) {
	s.src, s.pos, s.maxDepth = src, 0, maxDepth
	s.escaped = false
	s.more, s.keyBase = false, -1
	clear(s.keys[:max(s.keysHW, len(s.keys))])
	s.keysHW = 0
	clear(s.seen)
	s.seen = s.seen[:0]
	s.frames = s.frames[:0]
	s.keys = reuse(s.keys, maxPooledStack)
	s.buf = reuse(s.buf, maxPooledBuf)
}

// reuse returns s emptied, or nil when it has grown past limit.
func reuse[T any](s []T, limit int) []T {
	if cap(s) > limit {
		return nil
	}
	return s[:0]
}

// Pos returns the offset of the next byte to read: after NextKey or NextElem
// reported a value, its first byte; after a scalar or a close, just past it.
func (s *Scanner) Pos() int { return s.pos }

// Depth returns the number of arrays and objects open.
func (s *Scanner) Depth() int { return len(s.frames) }

// Escaped reports whether the last string read held escapes (and so is a
// decoded copy, not a piece of the data).
func (s *Scanner) Escaped() bool { return s.escaped }

// Value reads the value at the current position: a String's decoded text, a
// Number's literal, "" for other scalars. An Array or Object is entered
// (ErrTooDeep past the limit).
func (s *Scanner) Value() (Kind, string, error) {
	if s.pos >= len(s.src) {
		return Null, "", s.noValue()
	}
	switch c := s.src[s.pos]; c {
	case '{':
		return Object, "", s.enter(len(s.keys))
	case '[':
		return Array, "", s.enter(-1)
	case '"':
		str, err := s.string()
		return String, str, err
	case 't':
		return True, "", s.literal("true")
	case 'f':
		return False, "", s.literal("false")
	case 'n':
		return Null, "", s.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			lit, err := s.number()
			return Number, lit, err
		}
		return Null, "", s.noValue()
	}
}

func (s *Scanner) noValue() error {
	if s.pos < len(s.src) {
		return s.unexpected("where a value was expected")
	}
	if len(s.frames) == 0 {
		return s.fail(s.pos, ErrNotJSON, "no value")
	}
	return s.unexpected("")
}

// NextElem is called inside an array before each element: true when one
// follows (read it with Value), false when the array ends (and is left).
func (s *Scanner) NextElem() (bool, error) {
	if s.comma() {
		return true, nil
	}
	return s.next(']', "in array, expected ',' or ']'")
}

// next reads a comma, or close (leaving the container), and reports whether
// an element or member follows.
func (s *Scanner) next(close byte, where string) (bool, error) {
	first := !s.more
	if !first {
		s.space()
	}
	switch {
	case s.pos < len(s.src) && s.src[s.pos] == close:
		s.pos++
		s.leave()
		return false, nil
	case first:
		s.more = true
		return true, nil
	case s.pos < len(s.src) && s.src[s.pos] == ',':
		s.pos++
		s.space()
		return true, nil
	}
	return false, s.unexpected(where)
}

// comma reads a comma between two array elements with no space around it:
// it inlines, so Parse's hot loop tries it before NextElem.
func (s *Scanner) comma() bool {
	if p := s.pos; s.more && p+1 < len(s.src) && s.src[p] == ',' && s.src[p+1] > ' ' {
		s.pos = p + 1
		return true
	}
	return false
}

// NextKey is called inside an object before each member: it reads the key
// and colon and returns the key and true (read the value with Value), or
// false when the object ends (and is left). A repeated key is returned with
// ErrDuplicateKey.
func (s *Scanner) NextKey() (key string, ok bool, err error) {
	if ok, err = s.next('}', "in object, expected ',' or '}'"); !ok {
		return "", false, err
	}
	if s.pos >= len(s.src) || s.src[s.pos] != '"' {
		return "", false, s.unexpected("in object, expected a string key")
	}
	keyOff := s.pos
	if key, err = s.string(); err != nil {
		return "", false, err
	}
	if len(s.keys)-s.keyBase+1 < dupMapAt {
		for _, k := range s.keys[s.keyBase:] {
			if k == key {
				return key, false, s.fail(keyOff, ErrDuplicateKey, "key %s", quote(key))
			}
		}
	} else if s.repeated(key) {
		return key, false, s.fail(keyOff, ErrDuplicateKey, "key %s", quote(key))
	}
	s.keys = push(s.keys, key)
	s.space()
	if s.pos >= len(s.src) || s.src[s.pos] != ':' {
		return "", false, s.unexpected("in object, expected ':'")
	}
	s.pos++
	s.space()
	return key, true, nil
}

// End reports an error unless only whitespace follows the top-level value.
func (s *Scanner) End() error {
	s.space()
	if s.pos != len(s.src) {
		return s.unexpected("after the top-level value")
	}
	return nil
}

// Skip reads, checked, the rest of the innermost open array or object; at
// the top level it does nothing.
func (s *Scanner) Skip() error {
	for depth := len(s.frames); depth > 0 && len(s.frames) >= depth; {
		var more bool
		var err error
		if s.keyBase >= 0 {
			_, more, err = s.NextKey()
		} else {
			more, err = s.NextElem()
		}
		if err != nil {
			return err
		}
		if more {
			if _, _, err := s.Value(); err != nil {
				return err
			}
		}
	}
	return nil
}

// repeated reports whether key was already read in the innermost object
// (of dupMapAt members or more), and records it otherwise.
func (s *Scanner) repeated(key string) bool {
	if n := len(s.seen); n > 0 && s.seen[n-1].keyBase == s.keyBase {
		seen := s.seen[n-1].keys
		if _, dup := seen[key]; dup {
			return true
		}
		seen[key] = struct{}{}
		return false
	}
	// The dupMapAt-th key.
	seen := make(map[string]struct{}, 2*dupMapAt)
	for _, k := range s.keys[s.keyBase:] {
		if k == key {
			return true
		}
		seen[k] = struct{}{}
	}
	seen[key] = struct{}{}
	s.seen = append(s.seen, seenKeys{s.keyBase, seen})
	return false
}

// push appends v, doubling: the runtime grows large slices by a quarter,
// which for a hostile array of a million elements allocates several times
// the stack's final size.
func push[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = append(make([]T, 0, max(2*cap(s), 16)), s...)
	}
	return append(s, v)
}

// enter opens the array (keyBase < 0) or object (keyBase: its first key's
// index) at s.pos.
func (s *Scanner) enter(keyBase int) error {
	if len(s.frames) >= s.maxDepth {
		return s.fail(s.pos, ErrTooDeep, "nesting deeper than %d", s.maxDepth)
	}
	s.frames = append(s.frames, frame{more: s.more, keyBase: s.keyBase})
	s.more, s.keyBase = false, keyBase
	s.pos++ // the '[' or '{'
	s.space()
	return nil
}

func (s *Scanner) leave() {
	if k := s.keyBase; k >= 0 {
		// The keys past k are cleared by the next reset: here it would cost
		// a runtime call per object.
		s.keysHW = max(s.keysHW, len(s.keys))
		s.keys = s.keys[:k]
		if n := len(s.seen); n > 0 && s.seen[n-1].keyBase == k {
			s.seen[n-1].keys = nil
			s.seen = s.seen[:n-1]
		}
	}
	n := len(s.frames) - 1
	f := s.frames[n]
	s.more, s.keyBase = f.more, f.keyBase
	s.frames = s.frames[:n]
}

func (s *Scanner) fail(off int, sentinel error, format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: off, Detail: fmt.Sprintf(format, args...), Err: sentinel}
}

func (s *Scanner) unexpected(where string) error {
	if s.pos >= len(s.src) {
		return s.fail(s.pos, ErrNotJSON, "unexpected end of input")
	}
	rest := s.src[s.pos:]
	c := rest[0]
	switch {
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRuneInString(rest)
		if r == utf8.RuneError && size <= 1 {
			return s.fail(s.pos, ErrInvalidUTF8, "byte %#02x", c)
		}
		return s.fail(s.pos, ErrNotJSON, "unexpected %q %s", r, where)
	case strings.HasPrefix(rest, "NaN"), strings.HasPrefix(rest, "Infinity"), strings.HasPrefix(rest, "-Infinity"):
		return s.fail(s.pos, ErrNotJSON, "NaN and Infinity are not JSON numbers")
	default:
		return s.fail(s.pos, ErrNotJSON, "unexpected %q %s", c, where)
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// space inlines, and calls skipSpace only when there is whitespace.
func (s *Scanner) space() {
	if s.pos < len(s.src) && s.src[s.pos] <= ' ' {
		s.skipSpace()
	}
}

func (s *Scanner) skipSpace() { s.pos = skipWS(s.src, s.pos) }

func (s *Scanner) literal(word string) error {
	if !strings.HasPrefix(s.src[s.pos:], word) {
		return s.unexpected("where a value was expected")
	}
	s.pos += len(word)
	return nil
}

// plain marks the ASCII bytes that stand for themselves inside a string.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// string reads the string at s.pos, decoded; without escapes, a substring.
func (s *Scanner) string() (string, error) {
	src := s.src
	start := s.pos + 1
	i := start
	for {
		if i = skipPlain(src, i); i >= len(src) {
			break
		}
		c := src[i]
		switch {
		case c == '"':
			s.pos = i + 1
			s.escaped = false
			return src[start:i], nil
		case c == '\\':
			s.escaped = true
			return s.unescape(start, i)
		default:
			size, err := s.char(i)
			if err != nil {
				return "", err
			}
			i += size
		}
	}
	return "", s.fail(len(src), ErrNotJSON, "unterminated string")
}

// char checks a control or multi-byte character at s.src[i] inside a string
// and returns its length.
func (s *Scanner) char(i int) (int, error) {
	c := s.src[i]
	if c < 0x20 {
		return 0, s.fail(i, ErrNotJSON, "control character %#02x in string", c)
	}
	r, size := utf8.DecodeRuneInString(s.src[i:])
	if r == utf8.RuneError && size == 1 {
		return 0, s.fail(i, ErrInvalidUTF8, "byte %#02x in string", c)
	}
	return size, nil
}

// unescape decodes the string from start, its first escape at i.
func (s *Scanner) unescape(start, i int) (string, error) {
	buf, j, ok := appendUnescaped(append(s.buf[:0], s.src[start:i]...), s.src, i, false)
	s.buf = buf
	if !ok {
		return "", s.badString(j)
	}
	s.pos = j
	return string(buf), nil
}

// appendUnescaped writes the rest of the string from its first escape at
// s[j], decoded (canon: in its canonical form), and returns the index past
// the closing quote; or false and where it is invalid (len(s): unterminated).
func appendUnescaped(dst []byte, s string, j int, canon bool) ([]byte, int, bool) {
	for j < len(s) {
		c := s[j]
		switch {
		case plain[c]:
			dst = append(dst, c)
			j++
		case c == '"':
			return dst, j + 1, true
		case c == '\\':
			r, n, bad := escape(s, j)
			if bad != nil {
				return dst, j, false
			}
			if canon {
				dst = appendRune(dst, r)
			} else {
				dst = utf8.AppendRune(dst, r)
			}
			j += n
		default:
			r, size := utf8.DecodeRuneInString(s[j:])
			if c < 0x20 || r == utf8.RuneError && size == 1 {
				return dst, j, false
			}
			dst = append(dst, s[j:j+size]...)
			j += size
		}
	}
	return dst, j, false
}

// badString is the error at s.src[i], where appendUnescaped stopped.
func (s *Scanner) badString(i int) error {
	src := s.src
	if i >= len(src) {
		return s.fail(len(src), ErrNotJSON, "unterminated string")
	}
	if src[i] != '\\' {
		_, err := s.char(i)
		return err
	}
	switch _, _, bad := escape(src, i); {
	case bad == errUnterminated:
		return s.fail(len(src), ErrNotJSON, "unterminated string")
	case bad == ErrInvalidUTF8:
		return s.fail(i, ErrInvalidUTF8, "lone surrogate %s", src[i:i+6])
	case src[i+1] == 'u':
		return s.fail(i, ErrNotJSON, "invalid \\u escape")
	}
	return s.fail(i, ErrNotJSON, "invalid escape %q", src[i:i+2])
}

var errUnterminated = errors.New("unterminated string")

// escape decodes the escape at s[i] (a surrogate pair as one), and its
// length, or why not: errUnterminated, ErrInvalidUTF8 (a lone surrogate) or
// ErrNotJSON.
func escape(s string, i int) (r rune, n int, bad error) {
	if i+1 >= len(s) {
		return 0, 0, errUnterminated
	}
	if d := unescapes[s[i+1]]; d != 0 {
		return rune(d), 2, nil
	}
	if s[i+1] != 'u' {
		return 0, 0, ErrNotJSON
	}
	r, ok := hex4(s, i+2)
	if !ok {
		return 0, 0, ErrNotJSON
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	var lo rune
	if r < 0xDC00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
		lo, ok = hex4(s, i+8)
	}
	if !ok || lo < 0xDC00 || lo > 0xDFFF {
		return 0, 0, ErrInvalidUTF8
	}
	return utf16.DecodeRune(r, lo), 12, nil
}

var unescapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

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

func (s *Scanner) number() (string, error) {
	end, detail := scanNumber(s.src, s.pos)
	if detail != "" {
		return "", s.fail(end, ErrNotJSON, "%s", detail)
	}
	lit := s.src[s.pos:end]
	s.pos = end
	return lit, nil
}

// scanNumber matches the RFC 8259 number grammar at s[i:] and returns where
// it ends, or where it fails and why.
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
