package jcs

import (
	"math"
	"strconv"
)

// Float returns the value of a Number as a float64.
//
// It returns ErrNotNumber if v is not a Number, and a *SyntaxError wrapping
// ErrNotJSON if v.Str is not a JSON number literal or is outside the float64
// range (neither can happen for values built by Parse). A literal too small
// for float64, such as 1e-400, is 0, as in ECMAScript.
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

// appendNumber appends the canonical form of the number literal lit. Plain
// integers of up to 15 digits are their own canonical form; anything else
// goes through float64. A literal that is not a finite JSON number (possible
// only in a hand-built Value) is written as null.
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

// AppendFloat appends f as ECMAScript's Number.prototype.toString writes it,
// which is the number serialization of RFC 8785 §3.2.2.3: the shortest
// decimal that round-trips, in plain notation for 1e-7 < |f| < 1e21 and as
// d.ddde±n otherwise; -0 is "0". NaN and ±Inf, which have no JSON form, are
// written as null, as JSON.stringify does.
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
