package jcs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
)

func TestParseErrors(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	manyKeys := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			b.WriteString(`"k`)
			b.WriteString(strings.Repeat("x", i))
			b.WriteString(`":1,`)
		}
		b.WriteString(dup + `:2}`)
		return b.String()
	}
	tests := []struct {
		name   string
		in     string
		lim    jcs.Limits
		want   error
		offset int // -1: not checked
	}{
		// ErrNotJSON: grammar
		{"empty", "", jcs.Limits{}, jcs.ErrNotJSON, 0},
		{"only whitespace", " \n\t\r ", jcs.Limits{}, jcs.ErrNotJSON, 5},
		{"trailing garbage", `{"a":1} x`, jcs.Limits{}, jcs.ErrNotJSON, 8},
		{"two values", `1 2`, jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"trailing comma in array", `[1,]`, jcs.Limits{}, jcs.ErrNotJSON, 3},
		{"trailing comma in object", `{"a":1,}`, jcs.Limits{}, jcs.ErrNotJSON, 7},
		{"missing colon", `{"a" 1}`, jcs.Limits{}, jcs.ErrNotJSON, 5},
		{"missing comma", `[1 2]`, jcs.Limits{}, jcs.ErrNotJSON, 3},
		{"unquoted key", `{a:1}`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"single quotes", `{'a':1}`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"unclosed array", `[1`, jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"unclosed object", `{"a":1`, jcs.Limits{}, jcs.ErrNotJSON, 6},
		{"comment", `{} // c`, jcs.Limits{}, jcs.ErrNotJSON, 3},
		{"byte order mark", "\ufeff{}", jcs.Limits{}, jcs.ErrNotJSON, 0},
		{"non-ASCII outside string", `[é]`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"vertical tab is not whitespace", "\v1", jcs.Limits{}, jcs.ErrNotJSON, 0},
		{"capital True", `True`, jcs.Limits{}, jcs.ErrNotJSON, 0},
		{"truncated literal", `[tru]`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"literal with suffix", `nullx`, jcs.Limits{}, jcs.ErrNotJSON, 4},
		// ErrNotJSON: numbers
		{"NaN", `{"n": NaN}`, jcs.Limits{}, jcs.ErrNotJSON, 6},
		{"Infinity", `[Infinity]`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"-Infinity", `[-Infinity]`, jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"leading zero", `01`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"negative leading zero", `[-012]`, jcs.Limits{}, jcs.ErrNotJSON, 3},
		{"plus sign", `+1`, jcs.Limits{}, jcs.ErrNotJSON, 0},
		{"bare minus", `-`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"leading dot", `.5`, jcs.Limits{}, jcs.ErrNotJSON, 0},
		{"trailing dot", `1.`, jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"empty exponent", `1e`, jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"signed empty exponent", `1e+`, jcs.Limits{}, jcs.ErrNotJSON, 3},
		{"hex", `0x10`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"out of range", `[1e400]`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"negative out of range", `[-1.8e308]`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"huge integer", "1" + strings.Repeat("0", 400), jcs.Limits{}, jcs.ErrNotJSON, 0},
		// ErrNotJSON: strings
		{"unterminated string", `"abc`, jcs.Limits{}, jcs.ErrNotJSON, 4},
		{"unterminated after escape", `"abc\`, jcs.Limits{}, jcs.ErrNotJSON, 5},
		{"raw newline in string", "\"a\nb\"", jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"raw tab in string", "\"a\tb\"", jcs.Limits{}, jcs.ErrNotJSON, 2},
		{"raw NUL in escaped string", "\"\\n\x00\"", jcs.Limits{}, jcs.ErrNotJSON, 3},
		{"unknown escape", `"\x41"`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"bad hex in \\u", `"\u12G4"`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		{"short \\u", `"\u12"`, jcs.Limits{}, jcs.ErrNotJSON, 1},
		// ErrInvalidUTF8
		{"lone high surrogate", `"\ud800"`, jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"lone low surrogate", `"\udc00"`, jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"high surrogate then text", `"\ud83dx"`, jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"reversed pair", `"\ude00\ud83d"`, jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"two high surrogates", `"\ud83d\ud83d"`, jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"lone surrogate in key", `{"b\ud800key": 1}`, jcs.Limits{}, jcs.ErrInvalidUTF8, 3},
		{"invalid byte in string", "\"a\xffb\"", jcs.Limits{}, jcs.ErrInvalidUTF8, 2},
		{"invalid byte after escape", "\"\\n\xff\"", jcs.Limits{}, jcs.ErrInvalidUTF8, 3},
		{"truncated sequence", "\"\xe4\xb8\"", jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"overlong encoding", "\"\xc0\xaf\"", jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		{"Latin-1 card", "{\"name\": \"Caf\xe9\"}", jcs.Limits{}, jcs.ErrInvalidUTF8, 13},
		{"invalid byte outside string", "[\xff]", jcs.Limits{}, jcs.ErrInvalidUTF8, 1},
		// ErrDuplicateKey
		{"duplicate key", `{"a":1,"a":2}`, jcs.Limits{}, jcs.ErrDuplicateKey, 7},
		{"duplicate via escape", `{"a":1,"\u0061":2}`, jcs.Limits{}, jcs.ErrDuplicateKey, 7},
		{"duplicate nested", `{"x":{"a":1,"b":2,"a":3}}`, jcs.Limits{}, jcs.ErrDuplicateKey, 18},
		{"duplicate in a large object", manyKeys(100, `"kxxxxx"`), jcs.Limits{}, jcs.ErrDuplicateKey, -1},
		{"duplicate at the map threshold", manyKeys(63, `"k"`), jcs.Limits{}, jcs.ErrDuplicateKey, -1},
		{"duplicate past the map threshold", manyKeys(64, `"k"`), jcs.Limits{}, jcs.ErrDuplicateKey, -1},
		// ErrTooLarge
		{"over default size", `"` + strings.Repeat("a", jcs.DefaultMaxBytes) + `"`, jcs.Limits{}, jcs.ErrTooLarge, jcs.DefaultMaxBytes},
		{"over set size", `[1, 2, 3]`, jcs.Limits{MaxBytes: 8}, jcs.ErrTooLarge, 8},
		// ErrTooDeep
		{"arrays over default depth", deep(65), jcs.Limits{}, jcs.ErrTooDeep, 64},
		{"objects over default depth", deepObj(65), jcs.Limits{}, jcs.ErrTooDeep, 64 * 5},
		{"over set depth", `{"a":[[1]]}`, jcs.Limits{MaxDepth: 2}, jcs.ErrTooDeep, 6},
		{"deep attack", deep(100000), jcs.Limits{}, jcs.ErrTooDeep, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := jcs.Parse([]byte(tt.in), tt.lim)
			var se *jcs.SyntaxError
			if !errors.Is(err, tt.want) || !errors.As(err, &se) {
				t.Fatalf("Parse(%.40q) = %v, %v; want a *SyntaxError wrapping %v", tt.in, v.Kind, err, tt.want)
			}
			if tt.offset >= 0 && se.Offset != tt.offset {
				t.Errorf("Parse(%.40q) error offset = %d, want %d (%v)", tt.in, se.Offset, tt.offset, err)
			}
			if len(err.Error()) > 200 {
				t.Errorf("Parse(%.40q) error message is %d bytes long, want it bounded", tt.in, len(err.Error()))
			}
			// AppendCanonical finds the same problem at the same place.
			_, cerr := jcs.AppendCanonical(nil, []byte(tt.in), jcs.Options{Limits: tt.lim})
			var ce *jcs.SyntaxError
			if !errors.As(cerr, &ce) || *ce != *se {
				t.Errorf("AppendCanonical(%.40q) error = %v, want %v", tt.in, cerr, err)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want jcs.Value
	}{
		{"null", ` null `, jcs.Value{Kind: jcs.Null}},
		{"true", "\ttrue\n", jcs.Value{Kind: jcs.True}},
		{"false", "false", jcs.Value{Kind: jcs.False}},
		{"number kept as written", "1.50E+2", jcs.Value{Kind: jcs.Number, Str: "1.50E+2"}},
		{"negative zero", "-0", jcs.Value{Kind: jcs.Number, Str: "-0"}},
		{"underflow is a number", "1e-400", jcs.Value{Kind: jcs.Number, Str: "1e-400"}},
		{"largest double", "1.7976931348623157e308", jcs.Value{Kind: jcs.Number, Str: "1.7976931348623157e308"}},
		{"string decoded", `"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"`, jcs.Value{Kind: jcs.String, Str: "a\"\\/\b\f\n\r\té😀"}},
		{"escaped NUL", `"\u0000"`, jcs.Value{Kind: jcs.String, Str: "\x00"}},
		{"raw UTF-8", `"中文 😀"`, jcs.Value{Kind: jcs.String, Str: "中文 😀"}},
		{"DEL is not a control", "\"\x7f\"", jcs.Value{Kind: jcs.String, Str: "\x7f"}},
		{"noncharacter U+FFFF", "\"\uffff\"", jcs.Value{Kind: jcs.String, Str: "\uffff"}},
		{"empty array", "[ ]", jcs.Value{Kind: jcs.Array}},
		{"empty object", "{ }", jcs.Value{Kind: jcs.Object}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jcs.Parse([]byte(tt.in), jcs.Limits{})
			if err != nil || got.Kind != tt.want.Kind || got.Str != tt.want.Str || len(got.Elems) != 0 || len(got.Members) != 0 {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseTree(t *testing.T) {
	in := []byte(`{"b": [1, "x", {"c": null}], "a": {"d": true, "e": false}, "": -2.5e-3}`)
	v, err := jcs.Parse(in, jcs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	copy(in, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX") // the tree must not alias the input
	if len(v.Members) != 3 || v.Members[0].Key != "b" || v.Members[1].Key != "a" || v.Members[2].Key != "" {
		t.Fatalf("members = %+v, want keys b, a, \"\" in input order", v.Members)
	}
	b, _ := v.Get("b")
	if b.Kind != jcs.Array || len(b.Elems) != 3 || b.Elems[1].Str != "x" {
		t.Errorf(`Get("b") = %+v`, b)
	}
	c, ok := b.Elems[2].Get("c")
	if !ok || c.Kind != jcs.Null {
		t.Errorf(`Get("c") = %+v, %v`, c, ok)
	}
	if n, _ := v.Get(""); n.Str != "-2.5e-3" {
		t.Errorf(`Get("") = %+v`, n)
	}
	if _, ok := v.Get("z"); ok {
		t.Error(`Get("z") found a member`)
	}
	if _, ok := b.Get("b"); ok {
		t.Error(`Get on an array found a member`)
	}
}

func TestParseDepthLimit(t *testing.T) {
	in := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	if _, err := jcs.Parse([]byte(in), jcs.Limits{}); err != nil {
		t.Errorf("Parse(64 nested arrays) = %v, want nil", err)
	}
	if _, err := jcs.Parse([]byte(`[[[]]]`), jcs.Limits{MaxDepth: 3}); err != nil {
		t.Errorf("Parse(depth 3, limit 3) = %v, want nil", err)
	}
	if _, err := jcs.Parse([]byte(`"a"`), jcs.Limits{MaxBytes: 3}); err != nil {
		t.Errorf("Parse(3 bytes, limit 3) = %v, want nil", err)
	}
}

func TestParseObject(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{`{}`, nil},
		{` {"a":1} `, nil},
		{`[]`, jcs.ErrNotObject},
		{` "card"`, jcs.ErrNotObject},
		{`null`, jcs.ErrNotObject},
		{`[`, jcs.ErrNotJSON}, // not JSON wins over not an object
		{`{"a":1,"a":1}`, jcs.ErrDuplicateKey},
	}
	for _, tt := range tests {
		_, err := jcs.ParseObject([]byte(tt.in), jcs.Limits{})
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("ParseObject(%q) = %v, want %v", tt.in, err, tt.want)
		}
		_, err = jcs.AppendCanonical(nil, []byte(tt.in), jcs.Options{RequireObject: true})
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("AppendCanonical(%q, RequireObject) = %v, want %v", tt.in, err, tt.want)
		}
	}
	_, err := jcs.ParseObject([]byte(" []"), jcs.Limits{})
	var se *jcs.SyntaxError
	if !errors.As(err, &se) || se.Offset != 1 || se.Error() != "not a JSON object at byte 1: top-level value is array" {
		t.Errorf("ParseObject(\" []\") = %v, want offset 1 and a message naming the kind", err)
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		v    jcs.Value
		want float64
		err  error
	}{
		{jcs.Value{Kind: jcs.Number, Str: "1.50E+2"}, 150, nil},
		{jcs.Value{Kind: jcs.Number, Str: "-0"}, 0, nil},
		{jcs.Value{Kind: jcs.Number, Str: "1e-400"}, 0, nil},
		{jcs.Value{Kind: jcs.Number, Str: "1e400"}, 0, jcs.ErrNotJSON},
		{jcs.Value{Kind: jcs.Number, Str: "0x10"}, 0, jcs.ErrNotJSON},
		{jcs.Value{Kind: jcs.Number, Str: "1_000"}, 0, jcs.ErrNotJSON},
		{jcs.Value{Kind: jcs.Number, Str: ""}, 0, jcs.ErrNotJSON},
		{jcs.Value{Kind: jcs.String, Str: "1"}, 0, jcs.ErrNotNumber},
	}
	for _, tt := range tests {
		got, err := tt.v.Float()
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("Value{%v, %q}.Float() = %v, %v; want %v, %v", tt.v.Kind, tt.v.Str, got, err, tt.want, tt.err)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[jcs.Kind]string{jcs.Null: "null", jcs.Object: "object", jcs.Kind(42): "Kind(42)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

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
