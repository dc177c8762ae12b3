package schemas

import (
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The compiler knows the keywords the files use and refuses any other, so
// that a schema never means less here than it says.

// JSON types, as bits of node.types.
const (
	tNull = 1 << iota
	tBoolean
	tNumber
	tInteger // a number with an integral value
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "number": tNumber | tInteger, "integer": tInteger,
	"string": tString, "array": tArray, "object": tObject,
}

// node is one compiled subschema. Zero values mean "no constraint".
type node struct {
	never bool  // the schema false
	types uint8 // allowed types; 0 for any
	want  string

	enum []constant

	// strings: lengths in code points (-1: none), pattern, format.
	minLen, maxLen int
	pattern        func(string) bool
	patternSrc     string
	format         func(string) bool
	formatName     string

	// numbers: inclusive bounds.
	lo, hi *big.Rat

	// arrays.
	minItems, maxItems int
	items              *node

	// objects: the members the schema names, whether others are refused
	// (closed) or checked by extra, maxProperties (-1: none),
	// dependentSchemas and if/then/else.
	props     []prop
	required  []string
	closed    bool
	extra     *node
	maxProps  int
	dependent []dependent
	cond      *condition
}

type prop struct {
	name string
	node *node
}

// dependent is a dependentSchemas entry: when name is present, the members
// forbid must be absent (their schema is false) and require present.
type dependent struct {
	name    string
	forbid  []string
	require []string
}

// condition is if {"properties": {name: {"const": value}}} then/else
// {"required": [...]}: the member name, absent or equal to value, selects
// then.
type condition struct {
	name       string
	value      constant
	then, els  []string
	thenForbid []string
}

// constant is a string or a number of an enum or const.
type constant struct {
	str   string
	num   *big.Rat
	isNum bool
}

func (c constant) String() string {
	if c.isNum {
		return c.num.RatString()
	}
	return strconv.Quote(c.str)
}

// compiler compiles the schemas of one file.
type compiler struct {
	file string
	defs map[string]any
	done map[string]*node
}

func compileFile(file string, doc map[string]any) (*node, error) {
	c := &compiler{file: file, done: map[string]*node{}}
	c.defs, _ = doc["$defs"].(map[string]any)
	return c.node(doc, "")
}

// annotations are keywords that do not constrain a value.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$comment": true,
	"title": true, "description": true, "examples": true, "default": true,
}

func (c *compiler) errorf(at, format string, args ...any) error {
	return fmt.Errorf("schemas: file %s: %s: %s", c.file, orRoot(at), fmt.Sprintf(format, args...))
}

func orRoot(at string) string {
	if at == "" {
		return "(root)"
	}
	return at
}

func (c *compiler) node(v any, at string) (*node, error) {
	if b, ok := v.(bool); ok {
		return &node{never: !b, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, maxProps: -1}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, c.errorf(at, "a schema is an object or a boolean")
	}
	if ref, ok := m["$ref"].(string); ok {
		return c.ref(m, ref, at)
	}
	n := &node{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, maxProps: -1}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := c.keyword(n, m, k, at); err != nil {
			return nil, err
		}
	}
	return n, c.members(n, at)
}

// members checks that every member an object keyword names is one of its
// properties (so that Reader tracks its presence by index).
func (c *compiler) members(n *node, at string) error {
	if len(n.props) > 64 {
		return c.errorf(at, "more than 64 properties")
	}
	names := slices.Clone(n.required)
	for _, d := range n.dependent {
		names = append(append(append(names, d.name), d.forbid...), d.require...)
	}
	if cd := n.cond; cd != nil {
		names = append(append(append(append(names, cd.name), cd.then...), cd.els...), cd.thenForbid...)
	}
	for _, name := range names {
		if n.find(name) < 0 {
			return c.errorf(at, "member %s is not among the properties", name)
		}
	}
	return nil
}

// ref resolves a local reference to $defs; the referring object may add
// annotations only.
func (c *compiler) ref(m map[string]any, ref, at string) (*node, error) {
	for k := range m {
		if k != "$ref" && !annotations[k] {
			return nil, c.errorf(at, "keyword %s beside $ref", k)
		}
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	def, found := c.defs[name]
	if !ok || !found {
		return nil, c.errorf(at, "unresolvable $ref %s", ref)
	}
	if n, ok := c.done[name]; ok {
		if n == nil {
			return nil, c.errorf(at, "recursive $ref %s", ref)
		}
		return n, nil
	}
	c.done[name] = nil // a cycle resolves to nil, refused below
	n, err := c.node(def, "$defs/"+name)
	if err != nil {
		return nil, err
	}
	c.done[name] = n
	return n, nil
}

func (c *compiler) keyword(n *node, m map[string]any, k, at string) error {
	v := m[k]
	var err error
	switch k {
	case "type":
		s, _ := v.(string)
		bits, ok := typeBits[s]
		if !ok {
			return c.errorf(at, "type %v", v)
		}
		n.types, n.want = bits, s
	case "enum", "const":
		list, ok := v.([]any)
		if k == "const" {
			list, ok = []any{v}, true
		}
		if !ok {
			return c.errorf(at, "%s is not a list", k)
		}
		for _, x := range list {
			cst, err := c.constant(x, at)
			if err != nil {
				return err
			}
			n.enum = append(n.enum, cst)
		}
	case "minLength":
		n.minLen, err = c.count(v, at, k)
	case "maxLength":
		n.maxLen, err = c.count(v, at, k)
	case "minItems":
		n.minItems, err = c.count(v, at, k)
	case "maxItems":
		n.maxItems, err = c.count(v, at, k)
	case "maxProperties":
		n.maxProps, err = c.count(v, at, k)
	case "pattern":
		s, _ := v.(string)
		n.patternSrc = s
		n.pattern, err = compilePattern(s)
	case "format":
		s, _ := v.(string)
		n.formatName, n.format = s, formats[s]
		if n.format == nil {
			return c.errorf(at, "format %q", s)
		}
	case "minimum", "maximum":
		cst, err := c.constant(v, at)
		if err != nil || !cst.isNum {
			return c.errorf(at, "%s is not a number", k)
		}
		if k == "minimum" {
			n.lo = cst.num
		} else {
			n.hi = cst.num
		}
	case "items":
		n.items, err = c.node(v, at+"/items")
	case "required":
		n.required, err = c.names(v, at)
	case "properties":
		props, _ := v.(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			p, err := c.node(props[name], at+"/properties/"+name)
			if err != nil {
				return err
			}
			n.props = append(n.props, prop{name, p})
		}
	case "additionalProperties":
		if b, ok := v.(bool); ok && !b {
			n.closed = true
		} else {
			n.extra, err = c.node(v, at+"/additionalProperties")
		}
	case "dependentSchemas":
		deps, _ := v.(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			forbid, require, err := c.presence(deps[name], at)
			if err != nil {
				return err
			}
			n.dependent = append(n.dependent, dependent{name, forbid, require})
		}
	case "if":
		n.cond, err = c.condition(m, at)
	case "then", "else":
		if _, ok := m["if"]; !ok {
			return c.errorf(at, "%s without if", k)
		}
	default:
		if !annotations[k] {
			return c.errorf(at, "keyword %s is not supported", k)
		}
	}
	return err
}

func (c *compiler) constant(v any, at string) (constant, error) {
	switch v := v.(type) {
	case string:
		return constant{str: v}, nil
	case float64:
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
		if ok {
			return constant{num: r, isNum: true}, nil
		}
	}
	return constant{}, c.errorf(at, "constant %v is neither a string nor a number", v)
}

func (c *compiler) count(v any, at, k string) (int, error) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != float64(int(f)) {
		return 0, c.errorf(at, "%s is not a count", k)
	}
	return int(f), nil
}

func (c *compiler) names(v any, at string) ([]string, error) {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, c.errorf(at, "required holds a non-string")
		}
		out = append(out, s)
	}
	return out, nil
}

// presence compiles a subschema that may only require members or forbid
// them ({"properties": {name: false}}).
func (c *compiler) presence(v any, at string) (forbid, require []string, err error) {
	m, _ := v.(map[string]any)
	for k, x := range m {
		switch {
		case annotations[k]:
		case k == "required":
			if require, err = c.names(x, at); err != nil {
				return nil, nil, err
			}
		case k == "properties":
			for name, s := range x.(map[string]any) {
				if b, ok := s.(bool); !ok || b {
					return nil, nil, c.errorf(at, "conditional property %s is not false", name)
				}
				forbid = append(forbid, name)
			}
		default:
			return nil, nil, c.errorf(at, "conditional keyword %s is not supported", k)
		}
	}
	slices.Sort(forbid)
	return forbid, require, nil
}

// condition compiles if/then/else of the one supported form.
func (c *compiler) condition(m map[string]any, at string) (*condition, error) {
	ifs, _ := m["if"].(map[string]any)
	props, _ := ifs["properties"].(map[string]any)
	if len(ifs) != 1 || len(props) != 1 {
		return nil, c.errorf(at, "if is not {properties: {name: {const: value}}}")
	}
	cond := &condition{}
	for name, s := range props {
		sm, _ := s.(map[string]any)
		if len(sm) != 1 || sm["const"] == nil {
			return nil, c.errorf(at, "if is not {properties: {name: {const: value}}}")
		}
		cst, err := c.constant(sm["const"], at)
		if err != nil {
			return nil, err
		}
		cond.name, cond.value = name, cst
	}
	var err error
	if t, ok := m["then"]; ok {
		if cond.thenForbid, cond.then, err = c.presence(t, at); err != nil {
			return nil, err
		}
	}
	if e, ok := m["else"]; ok {
		forbid, req, err := c.presence(e, at)
		if err != nil || len(forbid) > 0 {
			return nil, c.errorf(at, "else may only require members")
		}
		cond.els = req
	}
	return cond, nil
}

// compilePattern compiles a pattern as the JSON Schema validator does
// (Go's regexp, unanchored); the patterns of the hot path have
// equivalent loops (formats.go, held to the regexp by TestFastPatterns).
func compilePattern(src string) (func(string) bool, error) {
	if f, ok := fastPatterns[src]; ok {
		return f, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

// depth is the longest path below n (0 for a scalar).
func (n *node) depth() int {
	d := 0
	for _, p := range n.props {
		d = max(d, 1+p.node.depth())
	}
	for _, c := range []*node{n.extra, n.items} {
		if c != nil {
			d = max(d, 1+c.depth())
		}
	}
	return d
}
