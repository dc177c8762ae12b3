package jcs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
)

// walk reads data with a Scanner, building nothing, and returns the first
// error.
func walk(data []byte, lim jcs.Limits) error {
	var s jcs.Scanner
	if err := s.Reset(data, lim); err != nil {
		return err
	}
	return walkWith(&s)
}

// TestScannerAgreesWithParse checks that a Scanner finds the problems Parse
// finds, at the same offsets, except the numbers outside the float64 range
// that only RFC 8785 refuses.
func TestScannerAgreesWithParse(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{"a":1} x`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `[1 2]`, `{a:1}`, `[1`, `{"a":1`,
		`[tru]`, `nullx`, `{"n": NaN}`, `[-Infinity]`, `01`, `1.`, `1e+`, `"abc`, `"abc\`,
		"\"a\nb\"", `"\x41"`, `"\u12"`, `"\ud800"`, `{"b\ud800key": 1}`, "\"a\xffb\"", "[\xff]",
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"a":1,"b":2,"a":3}}`, `{"x":[{"a":1},{"a":1}],"x":2}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		`{"a":[1,{"b":null}],"c":"d"}`, ` [ 1 , "x" , { } , [ ] ] `,
	} {
		for _, lim := range []jcs.Limits{{}, {MaxDepth: 2}, {MaxBytes: 8}} {
			_, perr := jcs.Parse([]byte(in), lim)
			serr := walk([]byte(in), lim)
			var pe, se *jcs.SyntaxError
			switch {
			case perr == nil && serr == nil:
			case errors.As(perr, &pe) && errors.As(serr, &se) && *pe == *se:
			default:
				t.Errorf("%+v: Scanner(%q) = %v, Parse = %v", lim, in, serr, perr)
			}
		}
	}
	// Only RFC 8785 cannot write 1e400.
	if _, err := jcs.Parse([]byte(`[1e400]`), jcs.Limits{}); !errors.Is(err, jcs.ErrNotJSON) {
		t.Errorf("Parse([1e400]) = %v, want ErrNotJSON", err)
	}
	if err := walk([]byte(`[1e400]`), jcs.Limits{}); err != nil {
		t.Errorf("Scanner([1e400]) = %v, want nil", err)
	}
}

func TestScannerPositions(t *testing.T) {
	in := []byte(` {"a" : [1, "x\n"], "b":{}} `)
	var s jcs.Scanner
	if err := s.Reset(in, jcs.Limits{}); err != nil {
		t.Fatal(err)
	}
	step := func(what string, pos, depth int) {
		t.Helper()
		if s.Pos() != pos || s.Depth() != depth {
			t.Fatalf("after %s: Pos() = %d, Depth() = %d; want %d, %d", what, s.Pos(), s.Depth(), pos, depth)
		}
	}
	step("Reset", 1, 0)
	if k, _, _ := s.Value(); k != jcs.Object {
		t.Fatalf("Value() = %v, want object", k)
	}
	step("{", 2, 1)
	if key, ok, err := s.NextKey(); key != "a" || !ok || err != nil {
		t.Fatalf("NextKey() = %q, %v, %v", key, ok, err)
	}
	step(`"a" :`, 8, 1)
	s.Value()
	s.NextElem()
	if k, text, _ := s.Value(); k != jcs.Number || text != "1" {
		t.Fatalf("Value() = %v %q, want number 1", k, text)
	}
	step("1", 10, 2)
	s.NextElem()
	if k, text, _ := s.Value(); k != jcs.String || text != "x\n" || !s.Escaped() {
		t.Fatalf("Value() = %v %q (escaped %v), want the string x\\n, escaped", k, text, s.Escaped())
	}
	if more, err := s.NextElem(); more || err != nil {
		t.Fatalf("NextElem() = %v, %v at the end of the array", more, err)
	}
	step("]", 18, 1)
	if key, ok, err := s.NextKey(); key != "b" || !ok || err != nil || s.Escaped() {
		t.Fatalf("NextKey() = %q, %v, %v", key, ok, err)
	}
	s.Value()
	if _, ok, _ := s.NextKey(); ok {
		t.Fatal("NextKey() in {} = true")
	}
	step("{}", 26, 1)
	if _, ok, _ := s.NextKey(); ok {
		t.Fatal("NextKey() at the end = true")
	}
	step("}", 27, 0)
	if err := s.End(); err != nil {
		t.Fatalf("End() = %v", err)
	}
}

func TestScannerDuplicateKey(t *testing.T) {
	var s jcs.Scanner
	s.Reset([]byte(`{"id":1,"i\u0064":2}`), jcs.Limits{})
	s.Value()
	s.NextKey()
	s.Value()
	key, ok, err := s.NextKey()
	if key != "id" || ok || !errors.Is(err, jcs.ErrDuplicateKey) {
		t.Errorf("NextKey() = %q, %v, %v; want the repeated key and ErrDuplicateKey", key, ok, err)
	}
}

// TestScannerReuse checks that a reused Scanner forgets the keys of the
// document before, also after an error.
func TestScannerReuse(t *testing.T) {
	var s jcs.Scanner
	for _, in := range []string{`{"a":{"b":[`, `{"a":1,"b":2}`, `{"b":{"a":1}}`} {
		want := error(nil)
		if strings.HasSuffix(in, "[") {
			want = jcs.ErrNotJSON
		}
		s.Reset([]byte(in), jcs.Limits{})
		var err error
		if err = walkWith(&s); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("walk(%q) = %v, want %v", in, err, want)
		}
	}
}

// walkWith reads the whole document with s.
func walkWith(s *jcs.Scanner) error {
	if _, _, err := s.Value(); err != nil {
		return err
	}
	if err := s.Skip(); err != nil {
		return err
	}
	return s.End()
}
