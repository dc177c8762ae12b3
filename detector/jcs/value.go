package jcs

import (
	"math"
	"strconv"
)

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

// Float returns the value of a Number: ErrNotNumber for another kind, a
// *SyntaxError wrapping ErrNotJSON for a literal that is not a JSON number
// within float64 (never from Parse). 1e-400 is 0, as in ECMAScript.
func (v Value) Float() (float64, error) {
	if v.Kind != Number {
		return 0, ErrNotNumber
	}
	if end, detail := scanNumber(v.Str, 0); detail != "" || end != len(v.Str) {
		if detail == "" {
			detail = "trailing characters in number"
		}
		return 0, &SyntaxError{Offset: end, Detail: detail + " in " + quote(v.Str), Err: ErrNotJSON}
	}
	f, err := strconv.ParseFloat(v.Str, 64)
	if err != nil {
		return 0, &SyntaxError{Detail: "number " + quote(v.Str) + " out of range", Err: ErrNotJSON}
	}
	return f, nil
}

// appendNumber appends the canonical form of the number literal lit; one
// that is not a finite JSON number (a hand-built Value) is null.
func appendNumber(dst []byte, lit string) []byte {
	if isShortInt(lit) {
		return append(dst, lit...)
	}
	f, err := Value{Kind: Number, Str: lit}.Float()
	if err != nil {
		return append(dst, "null"...)
	}
	return AppendFloat(dst, f)
}

// AppendFloat appends f as ECMAScript's Number.prototype.toString writes it
// (RFC 8785 §3.2.2.3); NaN and ±Inf as null, as JSON.stringify does.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(dst, "null"...)
	case f == 0: // and -0
		return append(dst, '0')
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	// Go writes at least two exponent digits ("1e+07"); ECMAScript writes
	// none padded ("1e+7").
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	n := len(dst)
	if dst[n-2] == '0' && (dst[n-3] == '+' || dst[n-3] == '-') {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}
