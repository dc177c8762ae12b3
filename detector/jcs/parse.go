package jcs

import (
	"cmp"
	"fmt"
	"strconv"
	"sync"
)

// Default limits, where a Limits field is zero or negative.
const (
	DefaultMaxBytes = 1 << 20 // 1 MiB
	DefaultMaxDepth = 64
)

// Limits bound the work on one document, so that a hostile input costs
// bounded time, memory and stack.
type Limits struct {
	MaxBytes int // longest input, whitespace included
	MaxDepth int // deepest nesting: "1" has depth 0, "[1]" depth 1
}

func (l Limits) maxBytes() int { return cmp.Or(max(l.MaxBytes, 0), DefaultMaxBytes) }

func (l Limits) maxDepth() int { return cmp.Or(max(l.MaxDepth, 0), DefaultMaxDepth) }

// Parse parses one RFC 8259 JSON text in valid UTF-8 into a Value tree,
// rejecting too what RFC 8785 cannot canonicalize (duplicate keys, lone
// surrogates, numbers outside float64). Errors are *SyntaxError. The tree
// shares no memory with data.
func Parse(data []byte, lim Limits) (Value, error) {
	if err := checkSize(data, lim); err != nil {
		return Value{}, err
	}
	p := parserPool.Get().(*parser)
	p.reset(string(data), lim.maxDepth())
	p.skipSpace()
	defer p.release()
	return p.document()
}

// ParseObject is Parse for a document that must be an object (else
// ErrNotObject).
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

// parser is a pooled Scanner and what is built from it. Children are pushed
// on stacks and, when their container closes, copied into exactly sized
// slices carved from slabs (which belong to the tree): a document costs a
// handful of allocations, not one per container.
type parser struct {
	Scanner

	elems      []Value
	members    []Member
	valueSlab  []Value // unused rest of the current slab
	memberSlab []Member
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

// release drops every reference into the document and returns p to the pool.
func (p *parser) release() {
	p.reset("", 0)
	// The stacks are non-empty after an error.
	p.valueSlab, p.memberSlab = nil, nil
	clear(p.elems)
	clear(p.members)
	p.elems = reuse(p.elems, maxPooledStack)
	p.members = reuse(p.members, maxPooledStack)
	parserPool.Put(p)
}

func (p *parser) document() (Value, error) {
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	if err := p.End(); err != nil {
		return Value{}, err
	}
	return v, nil
}

func (p *parser) value() (Value, error) {
	start := p.pos
	kind, text, err := p.Value()
	switch {
	case err != nil:
		return Value{}, err
	case kind == Object:
		return p.object()
	case kind == Array:
		return p.array()
	case kind == Number:
		return Value{Kind: Number, Str: text}, inRange(start, text)
	}
	return Value{Kind: kind, Str: text}, nil
}

// inRange rejects a number literal float64 cannot hold (nor RFC 8785 write).
func inRange(off int, lit string) error {
	if isShortInt(lit) {
		return nil
	}
	if _, err := strconv.ParseFloat(lit, 64); err != nil {
		return &SyntaxError{Offset: off, Detail: "number " + quote(lit) + " out of range", Err: ErrNotJSON}
	}
	return nil
}

func (p *parser) array() (Value, error) {
	base := len(p.elems)
	for {
		if !p.comma() {
			more, err := p.NextElem()
			if err != nil {
				return Value{}, err
			}
			if !more {
				break
			}
		}
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.elems = push(p.elems, v)
	}
	var elems []Value
	p.elems, elems = pop(p.elems, base, &p.valueSlab, len(p.src)/128)
	return Value{Kind: Array, Elems: elems}, nil
}

func (p *parser) object() (Value, error) {
	base := len(p.members)
	for {
		key, more, err := p.NextKey()
		if err != nil {
			return Value{}, err
		}
		if !more {
			break
		}
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.members = push(p.members, Member{Key: key, Value: v})
	}
	var members []Member
	p.members, members = pop(p.members, base, &p.memberSlab, len(p.src)/48)
	return Value{Kind: Object, Members: members}, nil
}

// Slab sizing: the first from the input length (cards hold about one member
// per 40 bytes, one element per 100), later ones doubling.
const (
	minSlab = 8
	maxSlab = 1024
)

func slabSize(estimate, prev int) int {
	n := max(estimate, 2*prev, minSlab)
	return min(n, maxSlab)
}

// pop moves the items of stack above base into a slice carved from *slab,
// and returns the stack without them and that slice (nil when none).
func pop[T any](stack []T, base int, slab *[]T, estimate int) ([]T, []T) {
	n := len(stack) - base
	if n == 0 {
		return stack, nil
	}
	items := alloc(slab, n, estimate)
	copy(items, stack[base:])
	clear(stack[base:])
	return stack[:base], items
}

// alloc returns n items from *slab, starting a new slab when it has too few
// (n past half a slab gets its own allocation).
func alloc[T any](slab *[]T, n, estimate int) []T {
	if n > len(*slab) {
		size := slabSize(estimate, cap(*slab))
		if n > size/2 {
			return make([]T, n)
		}
		*slab = make([]T, size)
	}
	s := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return s
}

// isShortInt reports an integer literal of at most 15 digits but "-0": exact
// in float64, and its own canonical form.
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
