package jcs

import "strconv"

// Kind is the JSON type of a Value.
type Kind uint8

// JSON kinds.
const (
	Null Kind = iota
	False
	True
	Number
	String
	Array
	Object
)

// Value is a parsed JSON value; objects keep their members in input order.
type Value struct {
	Kind Kind
	// Str is the decoded string of a String, the literal of a Number.
	Str     string
	Elems   []Value  // Array
	Members []Member // Object
}

type Member struct {
	Key   string
	Value Value
}

func Str(s string) Value { return Value{Kind: String, Str: s} }

func Bool(b bool) Value {
	if b {
		return Value{Kind: True}
	}
	return Value{Kind: False}
}

// Get returns the member key of an object, and whether it exists.
func (v *Value) Get(key string) (*Value, bool) {
	if v.Kind != Object {
		return nil, false
	}
	for i := range v.Members {
		if v.Members[i].Key == key {
			return &v.Members[i].Value, true
		}
	}
	return nil, false
}

var kindNames = [...]string{Null: "null", False: "false", True: "true", Number: "number", String: "string", Array: "array", Object: "object"}

// String returns the JSON name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}
