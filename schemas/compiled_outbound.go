package schemas

import (
	"strings"
)

// Typed checks: the compiled nodes of a schema (compiled.go), handed out
// one place at a time, so that a producer holding its data as Go values
// (events.Encode) can apply the schema to the values themselves instead of
// to a value tree parsed back from their JSON. The producer walks its own
// types; each Check applies the keywords of one place in the schema, read
// from the same nodes the tree walker applies, so a change to a node
// changes both. What a producer's walk leaves out (a member its type gained
// after the walk was written) is caught by its differential test against
// the JSON Schema validator, not here.

// Check is the compiled check of one place in a schema's data: the root, an
// object member, or the items of an array. The zero Check (a place the
// schema does not allow, such as an unknown member of a closed object)
// accepts nothing. A Check is a small value, safe to copy and to use
// concurrently.
type Check struct {
	n *node
	// required: the place is a member its parent object requires.
	required bool
}

// anyNode is the schema {}: a member of an open object without a schema
// for other members.
var anyNode = &node{kind: kAny, min: -1, max: -1, maxProps: -1}

// Check returns the compiled check at path below the root of the schema's
// data: member names, and "[]" for the items of an array ("findings", "[]",
// "rule"). It returns the zero Check when the schema has no compiled checks
// or does not allow the place.
func (s *Schema) Check(path ...string) Check {
	if s == nil || s.fast == nil {
		return Check{}
	}
	c := Check{n: s.fast}
	for _, p := range path {
		c = c.member(p)
		if c.n == nil {
			return Check{}
		}
	}
	return c
}

// member steps from c to the member name of an object, or to the items of
// an array for "[]".
func (c Check) member(name string) Check {
	n := c.n
	if name == "[]" {
		if n.kind != kArray || n.items == nil {
			return Check{}
		}
		return Check{n: n.items}
	}
	if n.kind != kObject && n.kind != kAny {
		return Check{}
	}
	for _, p := range n.props {
		if p.name == name {
			return Check{n: p.node, required: contains(n.required, name)}
		}
	}
	switch {
	case n.closed:
		return Check{}
	case n.extra != nil:
		return Check{n: n.extra}
	}
	return Check{n: anyNode}
}

// Valid reports whether the schema allows the place at all.
func (c Check) Valid() bool { return c.n != nil }

// Required reports whether the place is a member its object requires.
func (c Check) Required() bool { return c.required }

// String reports whether the place accepts the JSON string s (s as Go
// holds it: an invalid UTF-8 byte reads as U+FFFD, as encoding/json writes
// it, and counts as one code point).
func (c Check) String(s string) bool {
	n := c.n
	if n == nil {
		return false
	}
	if n.enum != nil {
		return contains(n.enum, s)
	}
	if n.nums != nil {
		return false
	}
	switch n.kind {
	case kAny:
		return true
	case kString:
		return n.str(s)
	}
	return false
}

// Int reports whether the place accepts the JSON integer i.
func (c Check) Int(i int64) bool {
	n := c.n
	if n == nil || n.enum != nil {
		return false
	}
	if n.nums != nil {
		return contains64(n.nums, i)
	}
	switch n.kind {
	case kAny:
		return true
	case kInteger:
		return (!n.hasLo || n.lo <= i) && (!n.hasHi || i <= n.hi)
	}
	return false
}

func contains64(list []int64, i int64) bool {
	for _, x := range list {
		if x == i {
			return true
		}
	}
	return false
}

// Bool reports whether the place accepts a JSON boolean.
func (c Check) Bool() bool {
	n := c.n
	return n != nil && n.enum == nil && n.nums == nil && (n.kind == kAny || n.kind == kBoolean)
}

// Any reports whether the place accepts every JSON value (the schema {}).
func (c Check) Any() bool {
	n := c.n
	return n != nil && n.enum == nil && n.nums == nil && n.kind == kAny
}

// Array reports whether the place accepts a JSON array of length items
// (its items are checked at c.Items()).
func (c Check) Array(length int) bool {
	n := c.n
	if n == nil || n.enum != nil || n.nums != nil {
		return false
	}
	switch n.kind {
	case kAny:
		return true
	case kArray:
		return (n.min < 0 || length >= n.min) && (n.max < 0 || length <= n.max)
	}
	return false
}

// Items returns the check of the items of an array place.
func (c Check) Items() Check {
	if c.n == nil {
		return Check{}
	}
	return c.member("[]")
}

// Member returns the check of member name of an object place.
func (c Check) Member(name string) Check {
	if c.n == nil {
		return Check{}
	}
	return c.member(name)
}

// Object reports whether the place accepts a JSON object whose members are
// exactly names (each once), as far as the object's own keywords go: its
// type, required, additionalProperties false, maxProperties, the exclusive
// pairs of dependentSchemas and the if/else requirement. value returns the
// string value of a member for the if/else condition ("" and false for a
// member that is not a string). The members' values are checked at
// c.Member(name). A member that falls under a schema for other members
// (additionalProperties with a schema) is not decided here: Object reports
// false, and the caller falls back to the tree walk.
func (c Check) Object(names []string, value func(name string) (string, bool)) bool {
	n := c.n
	if n == nil || n.enum != nil || n.nums != nil {
		return false
	}
	switch n.kind {
	case kAny:
		return true
	case kObject:
	default:
		return false
	}
	if n.maxProps >= 0 && len(names) > n.maxProps {
		return false
	}
	for _, r := range n.required {
		if !containsName(names, r) {
			return false
		}
	}
	if n.closed || n.extra != nil {
		for _, k := range names {
			if !n.has(k) {
				return false
			}
		}
	}
	if o := n.orRequire; o != nil && containsName(names, o.name) {
		v, ok := "", false
		if value != nil {
			v, ok = value(o.name)
		}
		if (!ok || v != o.value) && !containsName(names, o.missing) {
			return false
		}
	}
	for _, e := range n.exclusive {
		if containsName(names, e[0]) && containsName(names, e[1]) {
			return false
		}
	}
	return true
}

func containsName(names []string, s string) bool {
	for _, x := range names {
		if x == s {
			return true
		}
	}
	return false
}

// plainHTTPURL reports, without parsing, that s is an http or https URL
// of the plainest form — lower-case scheme, a host name of letters,
// digits, dots and hyphens, an optional port of digits, an optional path of
// unreserved characters, sub-delimiters, ':', '@' and '/', no query,
// fragment, user info or percent-escape — which the uri format (isURI)
// always accepts: url.Parse reads it without error, it is absolute, and its
// host name holds no colon. Agent and card URLs are of this form, so that
// the uri check costs neither url.Parse nor a lookup in the cache of
// accepted URLs. FuzzCompiled and TestPlainHTTPURL hold it to isURI.
func plainHTTPURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	i := 0
	for i < len(rest) && isHostByte(rest[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(rest) && rest[i] == ':' {
		i++
		for i < len(rest) && '0' <= rest[i] && rest[i] <= '9' {
			i++
		}
	}
	if i == len(rest) {
		return true
	}
	if rest[i] != '/' {
		return false
	}
	for ; i < len(rest); i++ {
		if !isPathByte(rest[i]) {
			return false
		}
	}
	return true
}

func isHostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-'
}

// isPathByte: RFC 3986 unreserved, sub-delims, ':', '@' and '/'.
func isPathByte(c byte) bool {
	if isHostByte(c) {
		return true
	}
	switch c {
	case '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/':
		return true
	}
	return false
}
