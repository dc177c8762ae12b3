package jcs_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/carddrift/carddrift/detector/jcs"
)

func ExampleTransform() {
	out, err := jcs.Transform([]byte(`{"b": [1.50E+2, "caf\u00e9"], "a": {"z": null, "\u20ac": 1e21}}`))
	fmt.Println(string(out), err)
	// Output: {"a":{"z":null,"€":1e+21},"b":[150,"café"]} <nil>
}

func ExampleParse() {
	v, err := jcs.Parse([]byte(`{"name": "Example Agent", "version": 1.0}`), jcs.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	name, _ := v.Get("name")
	version, _ := v.Get("version")
	f, _ := version.Float()
	fmt.Println(name.Str, version.Str, f)
	// Output: Example Agent 1.0 1
}

func ExampleParse_errors() {
	for _, in := range []string{`{"a": 1, "a": 2}`, `{"a": "\ud800"}`, `{"a": NaN}`, `[[[]]]`} {
		_, err := jcs.Parse([]byte(in), jcs.Limits{MaxDepth: 2})
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			fmt.Printf("%-18s offset %d: %v\n", in, se.Offset, se.Err)
		}
	}
	// Output:
	// {"a": 1, "a": 2}   offset 9: duplicate object key
	// {"a": "\ud800"}    offset 7: invalid UTF-8
	// {"a": NaN}         offset 6: not JSON
	// [[[]]]             offset 2: input exceeds nesting limit
}

func ExampleAppendWithout() {
	v, _ := jcs.ParseObject([]byte(`{"name": "A", "signatures": [{"signature": "x"}]}`), jcs.Limits{})
	fmt.Println(string(jcs.AppendWithout(nil, &v, "signatures")))
	// Output: {"name":"A"}
}

func ExampleAppendFloat() {
	a, b := 0.1, 0.2
	for _, f := range []float64{a + b, 1e21, 1e-7, 123456789, math.Copysign(0, -1)} {
		fmt.Println(string(jcs.AppendFloat(nil, f)))
	}
	// Output:
	// 0.30000000000000004
	// 1e+21
	// 1e-7
	// 123456789
	// 0
}

// ExampleScanner walks a document with a Scanner, printing each member of
// the top-level object whose value is a scalar.
func ExampleScanner() {
	var s jcs.Scanner
	if err := s.Reset([]byte(`{"name": "Example Agent", "skills": [{"id": "a"}], "version": 1.0}`), jcs.Limits{}); err != nil {
		fmt.Println(err)
		return
	}
	if kind, _, err := s.Value(); err != nil || kind != jcs.Object {
		fmt.Println("not an object", err)
		return
	}
	for {
		key, more, err := s.NextKey()
		if err != nil {
			fmt.Println(err)
			return
		}
		if !more {
			break
		}
		kind, text, err := s.Value()
		if err != nil {
			fmt.Println(err)
			return
		}
		if kind == jcs.Array || kind == jcs.Object {
			if err := s.Skip(); err != nil {
				fmt.Println(err)
				return
			}
			continue
		}
		fmt.Printf("%s: %s %s\n", key, kind, text)
	}
	fmt.Println(s.End())
	// Output:
	// name: string Example Agent
	// version: number 1.0
	// <nil>
}
