package signature

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Form is a way of turning an agent card into the bytes its signatures cover:
// each leaves out "signatures" and ends in RFC 8785. The values are stable.
type Form string

const (
	// FormServed is the card as served, canonicalised: the bytes the card
	// digest hashes (the TCK's CARD-SIGN vectors).
	FormServed Form = "served"
	// FormSDK is @a2a-js/sdk's canonicalizeAgentCard, byte for byte: the card
	// read as a v1.0 AgentCard as ts-proto's fromJSON reads it (other members
	// dropped, snake_case accepted, scalars coerced as JavaScript coerces
	// them, a oneof's first member kept), written back by toJSON, then every
	// "", null, [] and {} removed at any depth (cleanEmpty). It says nothing
	// of what that drops.
	FormSDK Form = "sdk"
	// FormSpec is §8.4.1 read literally, protobuf field presence: a REQUIRED
	// or optional field is kept whenever set, even to its default, others
	// when not default. It reproduces the specification's own example.
	FormSpec Form = "spec"
)

// Forms returns every form, the one that covers most first.
func Forms() []Form { return []Form{FormServed, FormSDK, FormSpec} }

// Canonical returns the bytes a signature over the card raw covers under f,
// or an error wrapping ErrNotCard or ErrUnknownForm.
func Canonical(raw []byte, f Form) ([]byte, error) {
	if !f.valid() {
		return nil, fmt.Errorf("%w: %q", ErrUnknownForm, f)
	}
	v, err := jcs.ParseObject(raw, jcs.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCard, err)
	}
	return AppendCanonical(nil, &v, f), nil
}

// AppendCanonical appends what a signature over the parsed card covers under
// f; a value that is not an object is an empty card, an unknown form appends
// nothing.
func AppendCanonical(dst []byte, card *jcs.Value, f Form) []byte {
	switch f {
	case FormServed:
		if card.Kind != jcs.Object {
			return append(dst, "{}"...)
		}
		return jcs.AppendWithout(dst, card, signaturesKey)
	case FormSDK:
		n := normalizer{}.message(agentCard, card)
		v, ok := cleanEmpty(&n)
		if !ok {
			return append(dst, "{}"...)
		}
		return jcs.Append(dst, &v)
	case FormSpec:
		v := normalizer{spec: true}.message(agentCard, card)
		return jcs.Append(dst, &v)
	}
	return dst
}

func (f Form) valid() bool { return f == FormServed || f == FormSDK || f == FormSpec }

const signaturesKey = "signatures"

// protoKey is the key a JavaScript object cannot hold as its own member when
// assigned (it sets the prototype): ts-proto and cleanEmpty lose it.
const protoKey = "__proto__"

// normalizer reads a JSON value as a protobuf message and writes it back, as
// ts-proto's fromJSON and toJSON do, or with spec by §8.4.1's presence rules.
type normalizer struct{ spec bool }

// message returns v read as m; a non-object is the empty message.
func (n normalizer) message(m *message, v *jcs.Value) jcs.Value {
	out := jcs.Value{Kind: jcs.Object}
	for i := range m.fields {
		f := &m.fields[i]
		fv := lookup(v, f)
		if fv == nil {
			continue
		}
		if val, ok := n.field(f, fv); ok {
			out.Members = append(out.Members, jcs.Member{Key: f.name, Value: val})
		}
		if m.oneof {
			break // the first alternative set is the oneof's value
		}
	}
	return out
}

// lookup returns field f of v under its JSON name, else its proto name, when
// set as ts-proto tests it (isSet); else nil.
func lookup(v *jcs.Value, f *field) *jcs.Value {
	if v.Kind != jcs.Object {
		return nil
	}
	if fv, ok := v.Get(f.name); ok && isSet(fv, f.kind) {
		return fv
	}
	if f.alias != "" {
		if fv, ok := v.Get(f.alias); ok && isSet(fv, f.kind) {
			return fv
		}
	}
	return nil
}

func isSet(v *jcs.Value, k kind) bool {
	switch k {
	case kStrings, kMessages:
		return v.Kind == jcs.Array
	case kMessageMap, kStringMap, kStruct:
		return v.Kind == jcs.Object || v.Kind == jcs.Array
	default:
		return v.Kind != jcs.Null
	}
}

// field returns the JSON form of f read from fv, and whether it is written.
func (n normalizer) field(f *field, fv *jcs.Value) (jcs.Value, bool) {
	keepEmpty := n.spec && f.required
	switch f.kind {
	case kString:
		s := jsString(fv)
		return jcs.Str(s), s != "" || keepEmpty
	case kOptString:
		return jcs.Str(jsString(fv)), true
	case kBool:
		b := jsBool(fv)
		return jcs.Bool(b), b || keepEmpty
	case kOptBool:
		return jcs.Bool(jsBool(fv)), true
	case kStrings:
		out := jcs.Value{Kind: jcs.Array, Elems: make([]jcs.Value, len(fv.Elems))}
		for i := range fv.Elems {
			out.Elems[i] = jcs.Str(jsString(&fv.Elems[i]))
		}
		return out, len(out.Elems) > 0 || keepEmpty
	case kMessage:
		// A message has presence (cleanEmpty may drop it later).
		return n.message(f.msg, fv), true
	case kMessages:
		out := jcs.Value{Kind: jcs.Array, Elems: make([]jcs.Value, len(fv.Elems))}
		for i := range fv.Elems {
			out.Elems[i] = n.message(f.msg, &fv.Elems[i])
		}
		return out, len(out.Elems) > 0 || keepEmpty
	case kMessageMap, kStringMap:
		out := jcs.Value{Kind: jcs.Object}
		each(fv, func(key string, val *jcs.Value) {
			if key == protoKey && !n.spec {
				return
			}
			var nv jcs.Value
			if f.kind == kMessageMap {
				nv = n.message(f.msg, val)
			} else {
				nv = jcs.Str(jsString(val))
			}
			out.Members = append(out.Members, jcs.Member{Key: key, Value: nv})
		})
		return out, len(out.Members) > 0 || keepEmpty
	case kStruct:
		return *fv, true
	}
	return jcs.Value{}, false
}

// each calls fn for a map field's entries as Object.entries lists them (an
// array's under "0", "1", ...).
func each(v *jcs.Value, fn func(key string, val *jcs.Value)) {
	if v.Kind == jcs.Array {
		for i := range v.Elems {
			fn(strconv.Itoa(i), &v.Elems[i])
		}
		return
	}
	for i := range v.Members {
		fn(v.Members[i].Key, &v.Members[i].Value)
	}
}

// cleanEmpty is the SDK's cleanEmpty: v without "", null, "__proto__" and
// what is left empty, at every depth, and whether anything is left. v is not
// modified (Structs share subtrees with the parsed card).
func cleanEmpty(v *jcs.Value) (jcs.Value, bool) {
	switch v.Kind {
	case jcs.Null:
		return jcs.Value{}, false
	case jcs.String:
		return *v, v.Str != ""
	case jcs.Array:
		var kept []jcs.Value
		for i := range v.Elems {
			if e, ok := cleanEmpty(&v.Elems[i]); ok {
				kept = append(kept, e)
			}
		}
		return jcs.Value{Kind: jcs.Array, Elems: kept}, len(kept) > 0
	case jcs.Object:
		var kept []jcs.Member
		for i := range v.Members {
			if v.Members[i].Key == protoKey {
				continue
			}
			if e, ok := cleanEmpty(&v.Members[i].Value); ok {
				kept = append(kept, jcs.Member{Key: v.Members[i].Key, Value: e})
			}
		}
		return jcs.Value{Kind: jcs.Object, Members: kept}, len(kept) > 0
	}
	return *v, true
}

// jsString is JavaScript's String(v).
func jsString(v *jcs.Value) string {
	switch v.Kind {
	case jcs.String:
		return v.Str
	case jcs.Number:
		f, err := v.Float()
		if err != nil {
			return v.Str
		}
		return string(jcs.AppendFloat(nil, f))
	case jcs.True:
		return "true"
	case jcs.False:
		return "false"
	case jcs.Null:
		return "null"
	case jcs.Object:
		return "[object Object]"
	case jcs.Array:
		var b strings.Builder
		for i := range v.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if v.Elems[i].Kind != jcs.Null {
				b.WriteString(jsString(&v.Elems[i]))
			}
		}
		return b.String()
	}
	return ""
}

// jsBool is JavaScript's Boolean(v).
func jsBool(v *jcs.Value) bool {
	switch v.Kind {
	case jcs.Null, jcs.False:
		return false
	case jcs.Number:
		f, err := v.Float()
		return err == nil && f != 0
	case jcs.String:
		return v.Str != ""
	}
	return true
}
