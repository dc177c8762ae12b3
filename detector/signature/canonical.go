package signature

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Form is a way of turning an agent card into the bytes its signatures cover
// (the JWS payload before base64url encoding). Every form leaves out the
// top-level "signatures" member and ends in RFC 8785 (JCS); they differ in
// what they normalise first. The values are stable: they may be recorded.
type Form string

const (
	// FormServed is the card as served, canonicalised: exactly the bytes
	// carddrift's card digest hashes. It covers every member the card serves.
	// The TCK's card-signing vectors (CARD-SIGN-001/002) and signers that
	// canonicalise the JSON they publish produce it.
	FormServed Form = "served"
	// FormSDK is the card as the A2A SDKs canonicalise it: @a2a-js/sdk's
	// canonicalizeAgentCard, byte for byte (a2a-python's and a2a-go's
	// canonicalisers have the same structure). The card is read as a v1.0
	// AgentCard message the way ts-proto's AgentCard.fromJSON reads it —
	// members outside the v1.0 schema dropped, snake_case names accepted,
	// scalars coerced as JavaScript's String() and Boolean() coerce them,
	// the first set member of a oneof kept — written back without proto3
	// defaults (AgentCard.toJSON), and then every "", null, empty array and
	// empty object removed at any depth (cleanEmpty), the contents of
	// google.protobuf.Struct fields (extension params) included. Only
	// optional bools that are set survive as false.
	//
	// A signature over this form says nothing about what the normalisation
	// drops, notably members outside the v1.0 schema and security schemes in
	// a shape the v1.0 JSON mapping does not define.
	FormSDK Form = "sdk"
	// FormSpec is A2A v1.0.1 §8.4.1 read literally: protobuf field presence.
	// Like FormSDK it keeps only the v1.0 schema, but a REQUIRED field or a
	// field with the optional keyword is kept whenever the card sets it, even
	// to its default ("description": "", "skills": []); other fields are
	// kept when they differ from their default; Struct contents and list
	// elements are kept as they are. It reproduces the specification's own
	// example, which FormSDK does not (the SDK drops the empty description
	// and skills).
	FormSpec Form = "spec"
)

// Forms returns every form, in the order Verify tries them: the one that
// covers most first.
func Forms() []Form { return []Form{FormServed, FormSDK, FormSpec} }

// Canonical returns the bytes that a signature over the agent card raw covers
// under form f. It returns an error wrapping ErrNotCard when raw is not a
// JSON object (see jcs.ParseObject for the limits), and ErrUnknownForm for a
// form it does not know. It is safe for concurrent use.
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

// AppendCanonical appends to dst the bytes that a signature over the parsed
// card covers under form f, and returns the extended buffer. card must come
// from jcs.Parse; a value that is not an object is read as an empty card. An
// unknown form appends nothing.
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

// signaturesKey is the top-level member no form covers (§8.4.1 rule 3).
const signaturesKey = "signatures"

// protoKey is the key that JavaScript objects cannot hold as their own
// member when assigned to (it sets the prototype instead): ts-proto's map
// readers and the SDK's cleanEmpty lose it.
const protoKey = "__proto__"

// normalizer reads a JSON value as a protobuf message and writes its JSON
// form back: with spec unset as ts-proto's fromJSON then toJSON do (before
// cleanEmpty), with spec set with the presence rules of §8.4.1.
type normalizer struct{ spec bool }

// message returns v read as m. A value that is not an object reads as the
// empty message (so does null, where ts-proto throws).
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

// lookup returns the value of field f in the object v, under its JSON name or
// else its proto name, or nil when neither is set. "Set" is what ts-proto
// tests before reading: not null for scalars and messages, an array for
// repeated fields, an object or an array for maps and Structs.
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

// field returns the JSON form of field f read from fv, and whether it is
// written at all.
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
		// A message has presence: ts-proto writes it ({} when empty) and
		// cleanEmpty drops it if nothing is left; §8.4.1 keeps it.
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

// each calls fn for every entry of a map field as JavaScript's Object.entries
// lists them: an object's members, or an array's elements under their
// indices ("0", "1", ...).
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

// cleanEmpty is the SDK's cleanEmpty: it returns v without "", null, and
// arrays and objects left empty, at every depth, and whether anything is left
// of v at all. Members named "__proto__" are dropped too, as assigning them in
// JavaScript does not create a member. v is not modified (Struct values share
// their subtrees with the parsed card).
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

// jsString is JavaScript's String(v) for a parsed JSON value: numbers as
// Number.prototype.toString writes them, objects as "[object Object]",
// arrays joined with "," (null elements as "").
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

// jsBool is JavaScript's Boolean(v) for a parsed JSON value.
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
