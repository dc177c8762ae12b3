package jcs

import (
	"slices"
	"strconv"
	"strings"
)

// The streaming canonicalizer behind AppendCanonical. It parses exactly as
// the tree parser does (same scanner, same checks, same errors) but writes
// canonical output as it goes instead of building a tree: scalars and arrays
// go straight to dst; the members of an object are written in input order
// and, when they are not already in canonical order, moved into it through a
// scratch buffer when the object closes. Memory is the output plus one span
// per member of the open objects; each byte is moved at most twice per
// level of object nesting, which MaxDepth bounds.

// span is one written member of an open object: dst[start:end] holds
// `"key":value`. An omitted member keeps its key (for duplicate detection)
// with start < 0.
type span struct {
	key        string
	start, end int
}

// canonical writes the canonical form of the document to dst.
func (p *parser) canonical(dst []byte) ([]byte, error) {
	p.skipSpace()
	if p.pos == len(p.src) {
		return dst, p.fail(p.pos, ErrNotJSON, "no value")
	}
	dst, err := p.writeValue(dst)
	if err != nil {
		return dst, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return dst, p.unexpected("after the top-level value")
	}
	return dst, nil
}

func (p *parser) writeValue(dst []byte) ([]byte, error) {
	if p.pos >= len(p.src) {
		return dst, p.unexpected("")
	}
	switch c := p.src[p.pos]; c {
	case '{':
		return p.writeObject(dst)
	case '[':
		return p.writeArray(dst)
	case '"':
		return p.writeString(dst)
	case 't':
		return p.writeLiteral(dst, "true")
	case 'f':
		return p.writeLiteral(dst, "false")
	case 'n':
		return p.writeLiteral(dst, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return p.writeNumber(dst)
		}
		return dst, p.unexpected("where a value was expected")
	}
}

func (p *parser) writeLiteral(dst []byte, word string) ([]byte, error) {
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return dst, p.unexpected("where a value was expected")
	}
	p.pos += len(word)
	return append(dst, word...), nil
}

// writeString writes the string at p.pos. A string without escapes holds
// nothing that needs escaping (control characters, '"' and '\\' cannot appear
// raw), so its input text, quotes included, is already canonical.
func (p *parser) writeString(dst []byte) ([]byte, error) {
	start := p.pos
	s, err := p.string()
	if err != nil {
		return dst, err
	}
	if !p.escaped {
		return append(dst, p.src[start:p.pos]...), nil
	}
	return appendString(dst, s), nil
}

func (p *parser) writeNumber(dst []byte) ([]byte, error) {
	end, detail := scanNumber(p.src, p.pos)
	if detail != "" {
		return dst, p.fail(end, ErrNotJSON, "%s", detail)
	}
	lit := p.src[p.pos:end]
	if isShortInt(lit) {
		p.pos = end
		return append(dst, lit...), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return dst, p.fail(p.pos, ErrNotJSON, "number %s out of range", quote(lit))
	}
	p.pos = end
	return AppendFloat(dst, f), nil
}

func (p *parser) writeArray(dst []byte) ([]byte, error) {
	if err := p.enter(); err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.depth--
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = p.writeValue(dst); err != nil {
			return dst, err
		}
		p.skipSpace()
		if p.pos < len(p.src) {
			if c := p.src[p.pos]; c == ',' {
				p.pos++
				p.skipSpace()
				dst = append(dst, ',')
				continue
			} else if c == ']' {
				p.pos++
				break
			}
		}
		return dst, p.unexpected("in array, expected ',' or ']'")
	}
	p.depth--
	return append(dst, ']'), nil
}

func (p *parser) writeObject(dst []byte) ([]byte, error) {
	if err := p.enter(); err != nil {
		return dst, err
	}
	open := len(dst)
	dst = append(dst, '{')
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.depth--
		return append(dst, '}'), nil
	}
	omitHere := p.omitting && p.depth == 1
	base := len(p.spans)
	kept := 0
	var seen map[string]struct{}
	for {
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return dst, p.unexpected("in object, expected a string key")
		}
		keyOff := p.pos
		key, err := p.string()
		if err != nil {
			return dst, err
		}
		if seen != nil {
			if _, dup := seen[key]; dup {
				return dst, p.fail(keyOff, ErrDuplicateKey, "key %s", quote(key))
			}
			seen[key] = struct{}{}
		} else {
			for i := base; i < len(p.spans); i++ {
				if p.spans[i].key == key {
					return dst, p.fail(keyOff, ErrDuplicateKey, "key %s", quote(key))
				}
			}
			if len(p.spans)-base+1 == dupMapAt {
				seen = make(map[string]struct{}, 2*dupMapAt)
				for i := base; i < len(p.spans); i++ {
					seen[p.spans[i].key] = struct{}{}
				}
				seen[key] = struct{}{}
			}
		}
		keyEnd := p.pos
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return dst, p.unexpected("in object, expected ':'")
		}
		p.pos++
		p.skipSpace()

		comma := len(dst)
		if kept > 0 {
			dst = append(dst, ',')
		}
		start := len(dst)
		if p.escaped {
			dst = appendString(dst, key)
		} else {
			dst = append(dst, p.src[keyOff:keyEnd]...)
		}
		dst = append(dst, ':')
		if dst, err = p.writeValue(dst); err != nil {
			return dst, err
		}
		if omitHere && key == p.omit {
			dst = dst[:comma]
			p.spans = append(p.spans, span{key: key, start: -1})
		} else {
			p.spans = append(p.spans, span{key: key, start: start, end: len(dst)})
			kept++
		}

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
		return dst, p.unexpected("in object, expected ',' or '}'")
	}
	dst = p.order(dst, open+1, p.spans[base:], kept)
	clear(p.spans[base:])
	p.spans = p.spans[:base]
	p.depth--
	return append(dst, '}'), nil
}

// order rewrites the members written at dst[body:] in canonical order, unless
// they already are in it. kept is the number of members not omitted.
func (p *parser) order(dst []byte, body int, spans []span, kept int) []byte {
	var small [sortInPlaceMax]int32
	idx := small[:0]
	if kept > len(small) {
		idx = make([]int32, 0, kept)
	}
	sorted := true
	for i := range spans {
		if spans[i].start < 0 {
			continue
		}
		if n := len(idx); n > 0 && sorted && compareKeys(spans[idx[n-1]].key, spans[i].key) > 0 {
			sorted = false
		}
		idx = append(idx, int32(i))
	}
	if sorted {
		return dst
	}
	if len(idx) <= sortInPlaceMax {
		for i := 1; i < len(idx); i++ {
			for j := i; j > 0 && compareKeys(spans[idx[j]].key, spans[idx[j-1]].key) < 0; j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
	} else {
		sortSpans(spans, idx)
	}
	p.tmp = append(p.tmp[:0], dst[body:]...)
	dst = dst[:body]
	for n, i := range idx {
		if n > 0 {
			dst = append(dst, ',')
		}
		s := spans[i]
		dst = append(dst, p.tmp[s.start-body:s.end-body]...)
	}
	return dst
}

// sortSpans is kept apart so that the closure does not make the stack array
// in order escape.
//
//go:noinline
func sortSpans(spans []span, idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int { return compareKeys(spans[a].key, spans[b].key) })
}
