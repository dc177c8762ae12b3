package jcs

import (
	"slices"
	"strconv"
)

// The streaming canonicalizer behind AppendCanonical. It reads exactly as
// the tree parser does (the same Scanner, the same checks, the same errors) but writes
// canonical output as it goes instead of building a tree: scalars and arrays
// go straight to dst; the members of an object are written in input order
// and, when they are not already in canonical order, moved into it through a
// scratch buffer when the object closes. Memory is the output plus one span
// per member of the open objects; each byte is moved at most twice per
// level of object nesting, which MaxDepth bounds.

// span is one written member of an open object: dst[start:end] holds
// `"key":value`. An omitted member has start < 0. Its key is the Scanner's
// (objectKeys).
type span struct {
	start, end int
}

// canonical writes the canonical form of the document to dst.
func (p *parser) canonical(dst []byte) ([]byte, error) {
	dst, err := p.writeValue(dst)
	if err != nil {
		return dst, err
	}
	return dst, p.End()
}

// writeValue writes the value at p.pos. Like parser.value, it does what
// Scanner.Value does without the extra call on every value.
func (p *parser) writeValue(dst []byte) ([]byte, error) {
	if p.pos >= len(p.src) {
		return dst, p.noValue()
	}
	switch c := p.src[p.pos]; c {
	case '"':
		s, err := p.string()
		if err != nil {
			return dst, err
		}
		return p.writeString(dst, s), nil
	case '{':
		if err := p.enter(len(p.keys)); err != nil {
			return dst, err
		}
		return p.writeObject(dst)
	case '[':
		if err := p.enter(-1); err != nil {
			return dst, err
		}
		return p.writeArray(dst)
	case 't':
		return append(dst, "true"...), p.literal("true")
	case 'f':
		return append(dst, "false"...), p.literal("false")
	case 'n':
		return append(dst, "null"...), p.literal("null")
	default:
		if c == '-' || isDigit(c) {
			start := p.pos
			lit, err := p.number()
			if err != nil {
				return dst, err
			}
			return writeNumber(dst, start, lit)
		}
		return dst, p.noValue()
	}
}

// writeString writes the string s just read. A string without escapes holds
// nothing that needs escaping (control characters, '"' and '\\' cannot appear
// raw), so its input text, quotes included, is already canonical.
func (p *parser) writeString(dst []byte, s string) []byte {
	if !p.escaped {
		return append(dst, p.src[p.strOff:p.strOff+len(s)+2]...)
	}
	return appendString(dst, s)
}

// writeNumber writes the number literal lit, read at offset off.
func writeNumber(dst []byte, off int, lit string) ([]byte, error) {
	if isShortInt(lit) {
		return append(dst, lit...), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return dst, outOfRange(off, lit)
	}
	return AppendFloat(dst, f), nil
}

// writeArray writes the array just entered.
func (p *parser) writeArray(dst []byte) ([]byte, error) {
	dst = append(dst, '[')
	for n := 0; ; n++ {
		if !p.comma() {
			more, err := p.NextElem()
			if err != nil {
				return dst, err
			}
			if !more {
				return append(dst, ']'), nil
			}
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = p.writeValue(dst); err != nil {
			return dst, err
		}
	}
}

// writeObject writes the object just entered.
func (p *parser) writeObject(dst []byte) ([]byte, error) {
	omitHere := p.omitting && p.Depth() == 1
	open := len(dst)
	dst = append(dst, '{')
	base := len(p.spans)
	kept := 0
	for {
		key, more, err := p.member()
		if err != nil {
			return dst, err
		}
		if !more {
			break
		}
		comma := len(dst)
		if kept > 0 {
			dst = append(dst, ',')
		}
		start := len(dst)
		dst = p.writeString(dst, key)
		dst = append(dst, ':')
		if dst, err = p.writeValue(dst); err != nil {
			return dst, err
		}
		if omitHere && key == p.omit {
			dst = dst[:comma]
			p.spans = append(p.spans, span{start: -1})
		} else {
			p.spans = append(p.spans, span{start: start, end: len(dst)})
			kept++
		}
	}
	dst = p.order(dst, open+1, p.spans[base:], p.objectKeys(), kept)
	p.spans = p.spans[:base]
	p.leave()
	return append(dst, '}'), nil
}

// order rewrites the members written at dst[body:] in canonical order, unless
// they already are in it. keys are the keys of spans; kept is the number of
// members not omitted.
func (p *parser) order(dst []byte, body int, spans []span, keys []string, kept int) []byte {
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
		if n := len(idx); n > 0 && sorted && compareKeys(keys[idx[n-1]], keys[i]) > 0 {
			sorted = false
		}
		idx = append(idx, int32(i))
	}
	if sorted {
		return dst
	}
	if len(idx) <= sortInPlaceMax {
		for i := 1; i < len(idx); i++ {
			for j := i; j > 0 && compareKeys(keys[idx[j]], keys[idx[j-1]]) < 0; j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
	} else {
		sortSpans(keys, idx)
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
func sortSpans(keys []string, idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int { return compareKeys(keys[a], keys[b]) })
}
