package schemas

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Reader reads the data of an event from a jcs.Scanner and checks it
// against its schema as it goes. The decoder asks for what its type holds
// (String, Int, Object, ...); whatever it does not ask for is checked all
// the same. Err reports the first violation by JSON pointer. Reset it
// before use; not safe for concurrent use.
type Reader struct {
	sc      *jcs.Scanner
	data    []byte
	typ     string
	owned   bool  // strings may be pieces of data
	cur     *node // the schema of the next value
	pending bool  // the next value is announced and not yet read

	path  [maxPath]step
	depth int

	lastKind jcs.Kind
	lastStr  string

	field, reason string
	violations    int
	// unheld: the first value the decoder cannot hold, if the data conforms.
	unheldField, unheldReason string
	err                       error
}

// maxPath bounds the depth of a violation: the deepest schema (load checks
// it) and one more for an unknown member.
const maxPath = 8

type step struct {
	key string
	idx int // -1 for a key
}

// anything is the schema {}: its values are passed over unchecked.
var anything = &node{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, maxProps: -1}

// Reset makes r read the next value of sc (data) against s. owned: data is
// the caller's own copy, so strings read may be pieces of it.
func (r *Reader) Reset(s *Schema, sc *jcs.Scanner, data []byte, owned bool) {
	*r = Reader{sc: sc, data: data, typ: s.Type, owned: owned, cur: s.root, pending: true}
}

// Err reports what reading found: the scanner's *jcs.SyntaxError, or a
// *ValidationError naming the first violating field, or nil.
func (r *Reader) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.pending {
		r.Skip()
		if r.err != nil {
			return r.err
		}
	}
	if r.violations == 0 {
		if r.unheldReason != "" {
			return &ValidationError{Type: r.typ, Field: r.unheldField, Reason: r.unheldReason}
		}
		return nil
	}
	reason := r.reason
	if r.violations > 1 {
		reason += " (and " + strconv.Itoa(r.violations-1) + " more violation(s))"
	}
	return &ValidationError{Type: r.typ, Field: r.field, Reason: reason}
}

// Failed reports whether a violation or a syntax error has been found.
func (r *Reader) Failed() bool { return r.err != nil || r.violations > 0 || r.unheldReason != "" }

// Violate records that the value just read is one the decoder's type
// cannot hold; Err reports the first when the data conforms.
func (r *Reader) Violate(reason string) {
	if r.unheldReason == "" {
		r.unheldField, r.unheldReason = r.pointer(""), reason
	}
}

func (r *Reader) violate(reason string) { r.record(r.pointer(""), reason) }

func (r *Reader) record(field, reason string) {
	r.violations++
	if r.violations == 1 || field < r.field {
		r.field, r.reason = field, reason
	}
}

func (r *Reader) pointer(member string) string {
	var b strings.Builder
	for _, s := range r.path[:min(r.depth, maxPath)] {
		b.WriteByte('/')
		if s.idx >= 0 {
			b.WriteString(strconv.Itoa(s.idx))
		} else {
			b.WriteString(escapeToken(s.key))
		}
	}
	if member != "" {
		b.WriteByte('/')
		b.WriteString(escapeToken(member))
	}
	return b.String()
}

func (r *Reader) push(s step) {
	if r.depth < maxPath {
		r.path[r.depth] = s
	}
	r.depth++
}

// next reads the next value and checks it, members and items aside.
func (r *Reader) next() (jcs.Kind, string) {
	r.pending = false
	if r.err != nil {
		return jcs.Null, ""
	}
	k, s, err := r.sc.Value()
	if err != nil {
		r.err = err
		return jcs.Null, ""
	}
	if r.cur != anything {
		r.check(r.cur, k, s)
	}
	r.lastKind, r.lastStr = k, s
	return k, s
}

func (r *Reader) rest(n *node, k jcs.Kind) {
	switch {
	case r.err != nil:
	case n == anything:
		r.err = r.sc.Skip()
	case k == jcs.Object:
		o := r.object(n)
		for o.Next() {
		}
	case k == jcs.Array:
		a := r.array(n)
		for a.Next() {
		}
	}
}

// Skip reads the next value, checking it, for nothing.
func (r *Reader) Skip() {
	n := r.cur
	if k, _ := r.next(); k == jcs.Object || k == jcs.Array {
		r.rest(n, k)
	}
}

// Raw reads the next value, checking it, and returns its bytes.
func (r *Reader) Raw() []byte {
	start := r.sc.Pos()
	r.Skip()
	if r.err != nil {
		return nil
	}
	if raw := r.data[start:r.sc.Pos()]; r.owned {
		return raw
	}
	return bytes.Clone(r.data[start:r.sc.Pos()])
}

// Any reads the next value, checking it, as encoding/json decodes JSON into
// an any with UseNumber.
func (r *Reader) Any() any {
	raw := r.Raw()
	if raw == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		r.Violate("not held: " + err.Error())
	}
	return v
}

// String reads the next value, a string.
func (r *Reader) String() string {
	before := r.violations
	k, s := r.next()
	if k != jcs.String {
		r.unheld(anything, before, k, "not a string")
		return ""
	}
	if r.owned || r.sc.Escaped() {
		return s
	}
	return strings.Clone(s)
}

// unheld passes over the rest of the value just read and records that the
// decoder cannot hold it, unless the schema already refused it.
func (r *Reader) unheld(n *node, before int, k jcs.Kind, reason string) {
	if k == jcs.Object || k == jcs.Array {
		r.rest(n, k)
	}
	if r.violations == before && r.err == nil {
		r.Violate(reason)
	}
}

// Bool reads the next value, a boolean.
func (r *Reader) Bool() bool {
	before := r.violations
	k, _ := r.next()
	if k != jcs.True && k != jcs.False {
		r.unheld(anything, before, k, "not a boolean")
	}
	return k == jcs.True
}

// Int reads the next value, an integer in [lo, hi] (1.0 and 1e3 are
// integers, as JSON Schema counts them).
func (r *Reader) Int(lo, hi int64) int64 {
	before := r.violations
	k, s := r.next()
	if k != jcs.Number {
		r.unheld(anything, before, k, "not an integer")
		return 0
	}
	i, ok := integer(s)
	if !ok || i < lo || i > hi {
		r.unheld(anything, before, k, "integer out of range: "+s)
		return 0
	}
	return i
}

// Time reads the next value, an RFC 3339 date-time.
func (r *Reader) Time() time.Time {
	before := r.violations
	s := r.String()
	if r.violations != before || r.err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.Violate("unsupported date-time: " + s)
	}
	return t
}

// Strings reads the next value, an array of strings.
func (r *Reader) Strings() []string {
	out := []string{}
	for a := r.Array(); a.Next(); {
		out = append(out, r.String())
	}
	return out
}

func integer(lit string) (int64, bool) {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return i, true
	}
	q, ok := new(big.Rat).SetString(tame(lit))
	if !ok || !q.IsInt() || !q.Num().IsInt64() {
		return 0, false
	}
	return q.Num().Int64(), true
}

// Object is an object being read: call Next before each member, and read
// the member's value (or not) before the next call.
type Object struct {
	r       *Reader
	n       *node
	depth   int
	count   int
	seen    uint64 // by index in n.props
	key     string
	condKey bool // the member being read is n.cond's
	condEq  bool // n.cond's member equals its value
	done    bool
}

// Object reads the next value, an object.
func (r *Reader) Object() Object {
	if n, ok := r.open(jcs.Object, "not an object"); ok {
		return r.object(n)
	}
	return Object{done: true}
}

// open reads the next value: its node if of kind want, else unheld.
func (r *Reader) open(want jcs.Kind, why string) (*node, bool) {
	n, before := r.cur, r.violations
	if k, _ := r.next(); k != want {
		r.unheld(n, before, k, why)
		return nil, false
	}
	return n, true
}

func (r *Reader) object(n *node) Object { return Object{r: r, n: n, depth: r.depth} }

// Next moves to the next member, false at the end; members the schema
// refuses are recorded and passed over.
func (o *Object) Next() bool {
	if o.done {
		return false
	}
	r, n := o.r, o.n
	for {
		if r.pending {
			r.Skip()
		}
		if o.condKey {
			o.condKey = false
			o.condEq = r.lastKind == jcs.String && !n.cond.value.isNum && r.lastStr == n.cond.value.str
		}
		r.depth = o.depth
		if r.err != nil {
			o.done = true
			return false
		}
		key, more, err := r.sc.NextKey()
		if err != nil {
			r.err = err
			o.done = true
			return false
		}
		if !more {
			o.done = true
			o.end()
			return false
		}
		o.count++
		r.push(step{key: key, idx: -1})
		r.pending, r.cur = true, anything
		i := n.find(key)
		switch {
		case i >= 0:
			o.seen |= 1 << i
			r.cur = n.props[i].node
		case n.closed:
			r.record(r.pointer(""), "unknown property")
			continue
		case n.extra != nil:
			r.cur = n.extra
		}
		o.condKey = n.cond != nil && key == n.cond.name
		o.key = key
		return true
	}
}

// Key returns the current member's name, valid until the next read.
func (o *Object) Key() string { return o.key }

// KeepKey returns the current member's name as a string of its own.
func (o *Object) KeepKey() string {
	if o.r.owned || o.r.sc.Escaped() {
		return o.key
	}
	return strings.Clone(o.key)
}

func (n *node) find(key string) int {
	for i := range n.props {
		if n.props[i].name == key {
			return i
		}
	}
	return -1
}

func (o *Object) has(name string) bool {
	i := o.n.find(name)
	return i >= 0 && o.seen&(1<<i) != 0
}

func (o *Object) end() {
	r, n := o.r, o.n
	if n.maxProps >= 0 && o.count > n.maxProps {
		r.record(r.pointer(""), "maxProperties: got "+strconv.Itoa(o.count)+", want "+strconv.Itoa(n.maxProps))
	}
	o.require(n.required)
	for _, d := range n.dependent {
		if o.has(d.name) {
			o.forbid(d.forbid)
			o.require(d.require)
		}
	}
	if c := n.cond; c != nil {
		if !o.has(c.name) || o.condEq {
			o.forbid(c.thenForbid)
			o.require(c.then)
		} else {
			o.require(c.els)
		}
	}
}

func (o *Object) require(names []string) {
	for _, name := range names {
		if !o.has(name) {
			o.r.record(o.r.pointer(name), "missing required property")
		}
	}
}

func (o *Object) forbid(names []string) {
	for _, name := range names {
		if o.has(name) {
			o.r.record(o.r.pointer(name), "property not allowed together with the properties present")
		}
	}
}

// Array is an array being read: call Next before each item.
type Array struct {
	r     *Reader
	n     *node
	depth int
	i     int
	done  bool
}

// Array reads the next value, an array.
func (r *Reader) Array() Array {
	if n, ok := r.open(jcs.Array, "not an array"); ok {
		return r.array(n)
	}
	return Array{done: true}
}

func (r *Reader) array(n *node) Array { return Array{r: r, n: n, depth: r.depth} }

// Next moves to the next item, false at the end.
func (a *Array) Next() bool {
	if a.done {
		return false
	}
	r, n := a.r, a.n
	if r.pending {
		r.Skip()
	}
	r.depth = a.depth
	if r.err != nil {
		a.done = true
		return false
	}
	more, err := r.sc.NextElem()
	if err != nil {
		r.err = err
	}
	if !more || err != nil {
		a.done = true
		if err == nil {
			a.end()
		}
		return false
	}
	r.push(step{idx: a.i})
	a.i++
	r.pending, r.cur = true, anything
	if n.items != nil {
		r.cur = n.items
	}
	return true
}

func (a *Array) end() {
	r, n := a.r, a.n
	if n.minItems >= 0 && a.i < n.minItems {
		r.record(r.pointer(""), "minItems: got "+strconv.Itoa(a.i)+", want "+strconv.Itoa(n.minItems))
	}
	if n.maxItems >= 0 && a.i > n.maxItems {
		r.record(r.pointer(""), "maxItems: got "+strconv.Itoa(a.i)+", want "+strconv.Itoa(n.maxItems))
	}
}

func (r *Reader) check(n *node, k jcs.Kind, s string) {
	if n.never {
		r.violate("property not allowed together with the properties present")
		return
	}
	if n.types != 0 && !n.allows(k, s) {
		r.violate("got " + k.String() + ", want " + n.want)
	}
	if n.enum != nil && !n.inEnum(k, s) {
		r.violate("value must be one of " + n.enumList())
	}
	switch k {
	case jcs.String:
		r.checkString(n, s)
	case jcs.Number:
		if n.lo != nil && compare(s, n.lo) < 0 {
			r.violate("minimum: got " + s + ", want " + n.lo.RatString())
		}
		if n.hi != nil && compare(s, n.hi) > 0 {
			r.violate("maximum: got " + s + ", want " + n.hi.RatString())
		}
	}
}

func (r *Reader) checkString(n *node, s string) {
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := len(s) // bytes ≥ code points
		if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			l = utf8.RuneCountInString(s)
		}
		if n.minLen >= 0 && l < n.minLen {
			r.violate("minLength: got " + strconv.Itoa(l) + ", want " + strconv.Itoa(n.minLen))
		}
		if n.maxLen >= 0 && l > n.maxLen {
			r.violate("maxLength: got " + strconv.Itoa(l) + ", want " + strconv.Itoa(n.maxLen))
		}
	}
	if n.pattern != nil && !n.pattern(s) {
		r.violate(quoteValue(s) + " does not match pattern " + strconv.Quote(n.patternSrc))
	}
	if n.format != nil && !n.format(s) {
		r.violate(quoteValue(s) + " is not valid " + n.formatName)
	}
}

func quoteValue(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
}

func (n *node) allows(k jcs.Kind, s string) bool {
	switch k {
	case jcs.Null:
		return n.types&tNull != 0
	case jcs.True, jcs.False:
		return n.types&tBoolean != 0
	case jcs.String:
		return n.types&tString != 0
	case jcs.Array:
		return n.types&tArray != 0
	case jcs.Object:
		return n.types&tObject != 0
	}
	if n.types&tNumber != 0 {
		return true
	}
	return n.types&tInteger != 0 && (!strings.ContainsAny(s, ".eE") || isIntegral(s))
}

func isIntegral(lit string) bool {
	q, ok := new(big.Rat).SetString(tame(lit))
	return ok && q.IsInt()
}

// tame caps a literal's exponent at 400 beyond its digits so that big.Rat
// holds it cheaply (1e1000000 costs milliseconds), which keeps whether it
// is an integer and how it compares with the schemas' few-digit bounds.
func tame(lit string) string {
	i := strings.IndexAny(lit, "eE")
	if i < 0 || len(lit)-i < 5 {
		return lit // no exponent, or one below 1000
	}
	exp, err := strconv.Atoi(lit[i+1:])
	bound := i + 400
	if err == nil && -bound <= exp && exp <= bound {
		return lit
	}
	if exp > 0 || err != nil && lit[i+1] != '-' {
		return lit[:i] + "e" + strconv.Itoa(bound)
	}
	return lit[:i] + "e-" + strconv.Itoa(bound)
}

func (n *node) inEnum(k jcs.Kind, s string) bool {
	for _, c := range n.enum {
		switch {
		case k == jcs.String && !c.isNum && c.str == s:
			return true
		case k == jcs.Number && c.isNum && compare(s, c.num) == 0:
			return true
		}
	}
	return false
}

func (n *node) enumList() string {
	var b strings.Builder
	for i, c := range n.enum {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	return b.String()
}

func compare(lit string, q *big.Rat) int {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil && q.IsInt() && q.Num().IsInt64() {
		return cmpInt(i, q.Num().Int64())
	}
	v, ok := new(big.Rat).SetString(tame(lit))
	if !ok {
		return 0 // not reached: the scanner has read a JSON number
	}
	return v.Cmp(q)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
