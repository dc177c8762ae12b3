package jcs

import (
	"cmp"
	"fmt"
	"strconv"
	"sync"
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

func (l Limits) maxBytes() int { return cmp.Or(max(l.MaxBytes, 0), DefaultMaxBytes) }

func (l Limits) maxDepth() int { return cmp.Or(max(l.MaxDepth, 0), DefaultMaxDepth) }

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
	p := parserPool.Get().(*parser)
	p.reset(string(data), lim.maxDepth())
	p.skipSpace()
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

// parser is the state of one parse: a Scanner and what is built from it.
// Children of the array or object being parsed are pushed on the elems and
// members stacks; when the container closes they are copied into exactly
// sized slices carved from slabs, so a document costs a handful of
// allocations rather than one per container. Parsers are pooled: the
// stacks and scratch buffers are reused by every parse; the slabs belong to
// the tree returned.
type parser struct {
	Scanner

	elems   []Value  // stack of array elements being collected
	members []Member // stack of object members being collected

	valueSlab  []Value  // unused rest of the current slab
	memberSlab []Member // unused rest of the current slab
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

// release drops every reference into the parsed document and returns p to
// the pool.
func (p *parser) release() {
	p.reset("", 0)
	// The slabs belong to the tree returned; the stacks are non-empty after
	// an error.
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

// value parses the value at p.pos.
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

// inRange rejects a number literal, read at offset off, that float64
// cannot hold and RFC 8785 so cannot write.
func inRange(off int, lit string) error {
	if isShortInt(lit) {
		return nil
	}
	if _, err := strconv.ParseFloat(lit, 64); err != nil {
		return &SyntaxError{Offset: off, Detail: "number " + quote(lit) + " out of range", Err: ErrNotJSON}
	}
	return nil
}

// array collects the elements of the array just entered.
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

// object collects the members of the object just entered.
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

// pop moves the items of stack above base (the children of the container
// just closed) into an exactly sized slice carved from *slab, and returns
// the stack without them and that slice (nil when there are none).
// estimate is the size of a first slab for this input.
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

// alloc returns n items from *slab, starting a new slab when it has too
// few left; a container too large for a slab gets its own allocation.
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
