package events

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts in a
// message (the structured envelope counts as one level).
const MaxDepth = 64

// parser is a strict, single-pass RFC 8259 parser producing the value tree
// the schema validator takes (map[string]any, []any, string, json.Number,
// bool, nil). It rejects invalid UTF-8 (including escaped lone surrogates),
// duplicate object keys and nesting deeper than MaxDepth. It can record the
// raw byte span of one member of the object at a given depth, so that the
// card of a submitted event is handed on byte for byte without parsing
// twice.
type parser struct {
	b     []byte
	i     int
	depth int

	capKey   string // member to capture ("" for none)
	capDepth int    // depth of the object whose member is captured
	capStart int
	capEnd   int
}

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg) }

func (p *parser) fail(msg string) error { return &syntaxError{p.i, msg} }

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// document parses one value followed only by whitespace.
func (p *parser) document() (any, error) {
	p.ws()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, p.fail("data after the top-level value")
	}
	return v, nil
}

func (p *parser) value() (any, error) {
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return nil, p.fail(fmt.Sprintf("unexpected byte %q", p.b[p.i]))
}

func (p *parser) lit(s string) error {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return p.fail("invalid literal")
	}
	p.i += len(s)
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.fail("nesting deeper than " + strconv.Itoa(MaxDepth))
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.i++ // {
	m := make(map[string]any, 8)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		p.depth--
		return m, nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("expected object key")
		}
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, p.fail(fmt.Sprintf("duplicate key %q", k))
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		p.ws()
		start := p.i
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if p.capKey != "" && p.depth == p.capDepth && k == p.capKey {
			p.capStart, p.capEnd = start, p.i
		}
		m[k] = v
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return m, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.i++ // [
	a := make([]any, 0, 4)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		p.depth--
		return a, nil
	}
	for {
		p.ws()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.ws()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return a, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// knownKeys interns the member names of carddrift events, so that parsing
// them allocates no key strings.
var knownKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"taskId", "agentUrl", "skillId", "requires", "streaming", "pushNotifications",
		"inputModes", "outputModes", "security", "posture", "idempotent", "card",
		"cardDigest", "cardUrl", "method", "attempt", "state", "artifactId",
		"mediaTypes", "code", "message", "pinned", "live", "digest", "fingerprint",
		"etag", "fetchedAt", "findings", "rule", "severity", "path", "before",
		"after", "skill", "scheme", "scope", "extension", "touches", "verdict", "action", "reason", "trigger",
		"scopes", "extensions", "extendedCard",
		"eventId", "type", "source", "status", "latencyMs", "detail", "attemptedAt",
	} {
		m[k] = k
	}
	return m
}()

// key parses an object key; known names come from knownKeys.
func (p *parser) key() (string, error) {
	start := p.i + 1
	end, simple, err := p.scanString()
	if err != nil {
		return "", err
	}
	if simple {
		raw := p.b[start:end]
		if k, ok := knownKeys[string(raw)]; ok {
			return k, nil
		}
		return string(raw), nil
	}
	return p.unescape(start, end)
}

// knownValues interns string values that recur in every event (attribute
// values, enums, common media types), for the same reason as knownKeys. It
// is built on first use, not at init, because it asks package schemas for
// the schema ids (which compiles the schemas).
var knownValues = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, v := range append([]string{
		"1.0", "application/json", "degrade", "fail-closed", "abort", "replan", "continue",
		"breaking", "warning", "info", "client-card", "client-digest", "first-fetch",
		"text/plain", "text/event-stream", "application/octet-stream", "text", "file", "data",
		"message/send", "message/stream", "SendMessage", "SendStreamingMessage",
		"submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled",
	}, Types...) {
		m[v] = v
		if id := schemaID(v); id != "" {
			m[id] = id
		}
	}
	return m
})

func (p *parser) str() (any, error) {
	start := p.i + 1
	end, simple, err := p.scanString()
	if err != nil {
		return nil, err
	}
	if simple {
		raw := p.b[start:end]
		if len(raw) <= 64 {
			if v, ok := knownValues()[string(raw)]; ok {
				return v, nil
			}
		}
		return string(raw), nil
	}
	return p.unescape(start, end)
}

// scanString moves past a string starting at p.i (the opening quote) and
// returns the offset of the closing quote. simple is true when the string
// has no escapes; its bytes are then checked to be valid UTF-8 without
// control characters.
func (p *parser) scanString() (end int, simple bool, err error) {
	i := p.i + 1
	ascii := true
	simple = true
	for ; i < len(p.b); i++ {
		c := p.b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(p.b[p.i+1:i]) {
				return 0, false, &syntaxError{p.i, "invalid UTF-8 in string"}
			}
			p.i = i + 1
			return i, simple, nil
		case c == '\\':
			simple = false
			i++ // skip the escaped byte; unescape validates it
		case c < 0x20:
			return 0, false, &syntaxError{i, "control character in string"}
		case c >= 0x80:
			ascii = false
		}
	}
	return 0, false, &syntaxError{p.i, "unterminated string"}
}

// unescape decodes the string body b[start:end] that has escapes.
func (p *parser) unescape(start, end int) (string, error) {
	out := make([]byte, 0, end-start)
	b := p.b[:end]
	for i := start; i < end; {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= end {
			return "", &syntaxError{i, "bad escape"}
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out = append(out, b[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i+2, end)
			if !ok {
				return "", &syntaxError{i, "bad \\u escape"}
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+1 < end && b[i] == '\\' && b[i+1] == 'u' {
					r2, ok = hex4(b, i+2, end)
				}
				dec := utf16.DecodeRune(r, r2)
				if !ok || dec == utf8.RuneError {
					return "", &syntaxError{i, "lone surrogate in \\u escape"}
				}
				r = dec
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", &syntaxError{i, "bad escape"}
		}
		i += 2
	}
	if !utf8.Valid(out) {
		return "", &syntaxError{start, "invalid UTF-8 in string"}
	}
	return string(out), nil
}

func hex4(b []byte, i, end int) (rune, bool) {
	if i+4 > end {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (p *parser) number() (any, error) {
	start := p.i
	b := p.b
	i := p.i
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		p.i = i
		return nil, p.fail("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			p.i = i
			return nil, p.fail("invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			p.i = i
			return nil, p.fail("invalid number")
		}
	}
	p.i = i
	return json.Number(b[start:i]), nil
}
