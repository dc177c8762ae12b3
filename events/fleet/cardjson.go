package fleet

import (
	"fmt"
	"slices"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// The fleet edits cards as ordered JSON trees (jcs.Value keeps members in
// input order), so an edited card still reads like the fixture it came from:
// the same key order, only the edited members differ. Cards are written back
// with two-space indentation; arrays of scalars stay on one line.

// parseTree parses a card body into an editable tree.
func parseTree(raw []byte) (jcs.Value, error) {
	v, err := jcs.ParseObject(raw, jcs.Limits{})
	if err != nil {
		return jcs.Value{}, fmt.Errorf("fleet: card is not a JSON object: %w", err)
	}
	return v, nil
}

// encodeTree writes v as indented JSON followed by a newline.
func encodeTree(v *jcs.Value) []byte {
	b := appendIndented(nil, v, "")
	return append(b, '\n')
}

func appendIndented(dst []byte, v *jcs.Value, indent string) []byte {
	switch v.Kind {
	case jcs.Object:
		if len(v.Members) == 0 {
			return append(dst, "{}"...)
		}
		inner := indent + "  "
		dst = append(dst, "{\n"...)
		for i := range v.Members {
			m := &v.Members[i]
			dst = append(dst, inner...)
			dst = jcs.Append(dst, &jcs.Value{Kind: jcs.String, Str: m.Key})
			dst = append(dst, ": "...)
			dst = appendIndented(dst, &m.Value, inner)
			if i < len(v.Members)-1 {
				dst = append(dst, ',')
			}
			dst = append(dst, '\n')
		}
		dst = append(dst, indent...)
		return append(dst, '}')
	case jcs.Array:
		if len(v.Elems) == 0 {
			return append(dst, "[]"...)
		}
		if allScalars(v.Elems) {
			dst = append(dst, '[')
			for i := range v.Elems {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				dst = jcs.Append(dst, &v.Elems[i])
			}
			return append(dst, ']')
		}
		inner := indent + "  "
		dst = append(dst, "[\n"...)
		for i := range v.Elems {
			dst = append(dst, inner...)
			dst = appendIndented(dst, &v.Elems[i], inner)
			if i < len(v.Elems)-1 {
				dst = append(dst, ',')
			}
			dst = append(dst, '\n')
		}
		dst = append(dst, indent...)
		return append(dst, ']')
	default:
		return jcs.Append(dst, v)
	}
}

func allScalars(vs []jcs.Value) bool {
	for i := range vs {
		if vs[i].Kind == jcs.Object || vs[i].Kind == jcs.Array {
			return false
		}
	}
	return true
}

// cloneTree returns a deep copy of v.
func cloneTree(v jcs.Value) jcs.Value {
	out := jcs.Value{Kind: v.Kind, Str: v.Str}
	if v.Elems != nil {
		out.Elems = make([]jcs.Value, len(v.Elems))
		for i := range v.Elems {
			out.Elems[i] = cloneTree(v.Elems[i])
		}
	}
	if v.Members != nil {
		out.Members = make([]jcs.Member, len(v.Members))
		for i := range v.Members {
			out.Members[i] = jcs.Member{Key: v.Members[i].Key, Value: cloneTree(v.Members[i].Value)}
		}
	}
	return out
}

// Tree constructors.

func jstr(s string) jcs.Value { return jcs.Value{Kind: jcs.String, Str: s} }

func jbool(b bool) jcs.Value {
	if b {
		return jcs.Value{Kind: jcs.True}
	}
	return jcs.Value{Kind: jcs.False}
}

func jstrs(ss ...string) jcs.Value {
	v := jcs.Value{Kind: jcs.Array, Elems: make([]jcs.Value, 0, len(ss))}
	for _, s := range ss {
		v.Elems = append(v.Elems, jstr(s))
	}
	return v
}

func jarr(vs ...jcs.Value) jcs.Value {
	return jcs.Value{Kind: jcs.Array, Elems: append([]jcs.Value{}, vs...)}
}

// jobj builds an object from alternating keys and values.
func jobj(kv ...any) jcs.Value {
	v := jcs.Value{Kind: jcs.Object, Members: []jcs.Member{}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Members = append(v.Members, jcs.Member{Key: kv[i].(string), Value: kv[i+1].(jcs.Value)})
	}
	return v
}

// Tree accessors.

// member returns obj[key] when obj is an object that has it.
func member(obj *jcs.Value, key string) *jcs.Value {
	if obj == nil {
		return nil
	}
	v, ok := obj.Get(key)
	if !ok {
		return nil
	}
	return v
}

// strMember returns obj[key] when it is a string.
func strMember(obj *jcs.Value, key string) string {
	if v := member(obj, key); v != nil && v.Kind == jcs.String {
		return v.Str
	}
	return ""
}

// setMember replaces obj[key] in place, or appends it.
func setMember(obj *jcs.Value, key string, val jcs.Value) {
	for i := range obj.Members {
		if obj.Members[i].Key == key {
			obj.Members[i].Value = val
			return
		}
	}
	obj.Members = append(obj.Members, jcs.Member{Key: key, Value: val})
}

// deleteMember removes obj[key] if present.
func deleteMember(obj *jcs.Value, key string) {
	obj.Members = slices.DeleteFunc(obj.Members, func(m jcs.Member) bool { return m.Key == key })
}

// objectMember returns obj[key], creating an empty object there when it is
// missing or not an object.
func objectMember(obj *jcs.Value, key string) *jcs.Value {
	if v := member(obj, key); v != nil && v.Kind == jcs.Object {
		return v
	}
	setMember(obj, key, jobj())
	return member(obj, key)
}

// sanitizeETagChars reports whether s can appear inside a quoted entity tag
// (RFC 9110 §8.8.3: %x21 / %x23-7E, no DQUOTE, no space or controls).
func sanitizeETagChars(s string) bool {
	if s == "" {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x21 || r == '"' || r > 0x7e
	})
}
