package jcs

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestCanonicalNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		// plain integers of up to 15 digits: the fast path
		{"0", "0"},
		{"42", "42"},
		{"-17", "-17"},
		{"999999999999999", "999999999999999"},
		{"-999999999999999", "-999999999999999"},
		// zero in all spellings
		{"-0", "0"},
		{"0.0", "0"},
		{"-0.0", "0"},
		{"0e10", "0"},
		{"1e-400", "0"},
		{"-1e-400", "0"},
		// integers past 15 digits go through float64
		{"1234567890123456", "1234567890123456"},
		{"9007199254740993", "9007199254740992"},
		{"123456789012345678", "123456789012345680"},
		{"12345678901234567890", "12345678901234567000"},
		// fractions and exponents
		{"1.0", "1"},
		{"10.0", "10"},
		{"4.50", "4.5"},
		{"1.50E+2", "150"},
		{"1E2", "100"},
		{"123e-2", "1.23"},
		{"2e-3", "0.002"},
		{"0.1", "0.1"},
		{"3.14159", "3.14159"},
		{"-123.456", "-123.456"},
		{"0.30000000000000004", "0.30000000000000004"},
		{"333333333.33333329", "333333333.3333333"},
		// the ECMAScript thresholds: plain from 1e-6 up to below 1e21
		{"1e-6", "0.000001"},
		{"0.000001", "0.000001"},
		{"1e-7", "1e-7"},
		{"-1.5e-7", "-1.5e-7"},
		{"9.999999999999997e-7", "9.999999999999997e-7"},
		{"1e20", "100000000000000000000"},
		{"123456789012345678901", "123456789012345680000"},
		{"1e21", "1e+21"},
		{"1E30", "1e+30"},
		{"100000000000000000000000", "1e+23"},
		{"0.000000000000000000000000001", "1e-27"},
		{"1e-10", "1e-10"},
		{"1.5e300", "1.5e+300"},
		{"5e-324", "5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"-1.7976931348623157e308", "-1.7976931348623157e+308"},
	}
	for _, tt := range tests {
		if got := string(appendNumber(nil, tt.in)); got != tt.want {
			t.Errorf("appendNumber(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if got, err := Transform([]byte(tt.in)); err != nil || string(got) != tt.want {
			t.Errorf("Transform(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestAppendFloatES6 runs the sample lines of the cyberphone ES6 number test
// file (hex IEEE-754 bits, expected text).
func TestAppendFloatES6(t *testing.T) {
	tests := []struct{ bits, want string }{
		{"4340000000000001", "9007199254740994"},
		{"4340000000000002", "9007199254740996"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"8000000000000000", "0"},
		{"0", "0"},
		{"1", "5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"7ff0000000000000", "null"}, // +Inf
		{"7ff8000000000000", "null"}, // NaN
	}
	for _, tt := range tests {
		u, err := strconv.ParseUint(tt.bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(AppendFloat(nil, math.Float64frombits(u))); got != tt.want {
			t.Errorf("AppendFloat(%s) = %s, want %s", tt.bits, got, tt.want)
		}
	}
}

func TestAppendHandBuiltValues(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		want string
	}{
		{"invalid number literal", Value{Kind: Number, Str: "0x10"}, "null"},
		{"out of range literal", Value{Kind: Number, Str: "1e400"}, "null"},
		{"empty number literal", Value{Kind: Number}, "null"},
		{"unknown kind", Value{Kind: 99}, "null"},
		{"nil object", Value{Kind: Object}, "{}"},
		{"nil array", Value{Kind: Array}, "[]"},
		{"string needing escapes", Value{Kind: String, Str: "\"\\\x00\x1f\x7f"}, `"\"\\\u0000\u001f` + "\x7f\""},
	}
	for _, tt := range tests {
		if got := string(Append(nil, &tt.v)); got != tt.want {
			t.Errorf("%s: Append = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestCanonicalStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`""`, `""`},
		{`"plain ascii text that is longer than eight bytes"`, `"plain ascii text that is longer than eight bytes"`},
		{`"\u0041\u00e9\u4e2d\ud83d\ude00"`, `"Aé中😀"`},
		{`"\/"`, `"/"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0008\u000C\u000a"`, `"\b\f\n"`},
		{`"\u0000\u0001\u001F\u000b"`, `"\u0000\u0001\u001f\u000b"`},
		{`"\u007f\u0080\u2028\u2029"`, "\"\x7f\u0080\u2028\u2029\""},
		{`"quote \" and backslash \\ at the end of a long string\\"`, `"quote \" and backslash \\ at the end of a long string\\"`},
		{`"</script>"`, `"</script>"`},
	}
	for _, tt := range tests {
		if got, err := Transform([]byte(tt.in)); err != nil || string(got) != tt.want {
			t.Errorf("Transform(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	// Every byte value, at every position relative to the 8-byte words.
	for c := range 0x80 {
		for pad := range 9 {
			s := strings.Repeat("a", pad) + string(rune(c)) + strings.Repeat("b", 9-pad)
			got := string(appendString(nil, s))
			want := referenceQuote(s)
			if got != want {
				t.Errorf("appendString(%q) = %s, want %s", s, got, want)
			}
		}
	}
}

// referenceQuote is a byte-at-a-time RFC 8785 string writer.
func referenceQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xF])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestStringScanWordBoundaries(t *testing.T) {
	// A special byte at every offset of the word-at-a-time scan.
	for _, special := range []string{`\"`, `\\`, `é`, `😀`, `\n`} {
		for pad := range 17 {
			raw := strings.Repeat("x", pad) + special + strings.Repeat("y", 17-pad)
			v, err := Parse([]byte(`"`+raw+`"`), Limits{})
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", raw, err)
			}
			want, _ := strconv.Unquote(`"` + raw + `"`)
			if v.Str != want {
				t.Errorf("Parse(%q) = %q, want %q", raw, v.Str, want)
			}
		}
	}
	for pad := range 17 {
		raw := strings.Repeat("x", pad) + "\x01" + strings.Repeat("y", 17-pad)
		if _, err := Parse([]byte(`"`+raw+`"`), Limits{}); err == nil {
			t.Errorf("Parse(%q) accepted a raw control character", raw)
		}
	}
}

func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func TestCompareKeys(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "a", -1},
		{"a", "b", -1},
		{"B", "a", -1},
		{"1", "10", -1},
		{"10", "2", -1},
		{"cafe", "café", -1},
		{"cafe\u0301", "caf\u00e9", -1}, // combining form (e + U+0301) first
		{"b😀key", "b！key", -1},          // U+1F600 (D83D DE00) before U+FF01
		{"x𐀀end", "x\ue000end", -1},     // U+10000 before U+E000
		{"\ud7ff", "😀", -1},             // below the surrogates: code point order
		{"\uffff", "\U0010ffff", 1},
		{"😀", "😁", -1},
		{"€", "\u0080", 1},
	}
	for _, tt := range tests {
		if got := compareKeys(tt.a, tt.b); got != tt.want {
			t.Errorf("compareKeys(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := compareKeys(tt.b, tt.a); got != -tt.want {
			t.Errorf("compareKeys(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
		if ref := utf16Compare(tt.a, tt.b); ref != tt.want {
			t.Errorf("test case (%q, %q) disagrees with the UTF-16 reference", tt.a, tt.b)
		}
	}
	// Random keys drawn from the ranges where UTF-8 and UTF-16 orders meet.
	alphabet := []rune{'a', 'b', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xe001, 0xfffd, 0xffff, 0x10000, 0x10001, 0x1f600, 0x10ffff}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() string {
		rs := make([]rune, rng.IntN(4))
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(rs)
	}
	for range 100000 {
		a, b := key(), key()
		if got, want := compareKeys(a, b), utf16Compare(a, b); got != want {
			t.Fatalf("compareKeys(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

func TestObjectOrder(t *testing.T) {
	// Enough members for the large-object sort, in reverse order, with keys
	// that need the UTF-16 correction.
	var in, want strings.Builder
	keys := []string{}
	for i := range 300 {
		keys = append(keys, strconv.Itoa(i), "\ue000"+strconv.Itoa(i), "😀"+strconv.Itoa(i))
	}
	in.WriteString("{")
	for i := len(keys) - 1; i >= 0; i-- {
		in.WriteString(strconv.Quote(keys[i]) + ":" + strconv.Itoa(i))
		if i > 0 {
			in.WriteString(",")
		}
	}
	in.WriteString("}")
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return utf16Compare(keys[a], keys[b]) })
	want.WriteString("{")
	for n, i := range idx {
		if n > 0 {
			want.WriteString(",")
		}
		want.WriteString(`"` + keys[i] + `":` + strconv.Itoa(i))
	}
	want.WriteString("}")
	got, err := Transform([]byte(in.String()))
	if err != nil || string(got) != want.String() {
		t.Errorf("Transform(large object) = %.200s, %v; want %.200s", got, err, want.String())
	}
	// The tree itself keeps input order.
	v, _ := Parse([]byte(`{"b":1,"a":2}`), Limits{})
	_ = Append(nil, &v)
	if v.Members[0].Key != "b" {
		t.Error("Append reordered the members of the tree")
	}
}

func TestAppendWithout(t *testing.T) {
	in := `{"signatures":[1],"b":{"signatures":2},"a":[{"signatures":3}]}`
	v, err := Parse([]byte(in), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"a":[{"signatures":3}],"b":{"signatures":2}}`
	if got := string(AppendWithout(nil, &v, "signatures")); got != want {
		t.Errorf("AppendWithout = %s, want %s", got, want)
	}
	if got, _ := AppendCanonical(nil, []byte(in), Options{Omit: "signatures"}); string(got) != want {
		t.Errorf("AppendCanonical(Omit) = %s, want %s", got, want)
	}
	arr := Value{Kind: Array, Elems: []Value{{Kind: True}}}
	if got := string(AppendWithout(nil, &arr, "signatures")); got != "[true]" {
		t.Errorf("AppendWithout(array) = %s, want [true]", got)
	}
}

func TestAppendCanonicalPooledState(t *testing.T) {
	// Alternate documents of different shapes through the pooled parser so
	// that reused slabs, stacks and arenas are exercised, and check against
	// the unpooled Parse + Append.
	docs := []string{
		`{"a":"x\ny","b":[1,2,{"c":"\u00e9"}],"d":{"e":[],"f":{}}}`,
		`[` + strings.Repeat(`{"k":"v\t","n":1.5},`, 500) + `0]`,
		`{"z":"` + strings.Repeat(`\"`, 5000) + `"}`,
		`"top-level \\ string"`,
		`{"bad":"\ud800"}`,
		`{"a":1,"a":2}`,
	}
	for round := range 3 {
		for _, d := range docs {
			want, werr := Parse([]byte(d), Limits{})
			got, err := AppendCanonical([]byte("prefix"), []byte(d), Options{})
			if (err == nil) != (werr == nil) {
				t.Fatalf("round %d: AppendCanonical(%.30q) error %v, Parse error %v", round, d, err, werr)
			}
			if err != nil {
				if string(got) != "prefix" {
					t.Errorf("AppendCanonical changed dst on error: %q", got)
				}
				continue
			}
			if w := Append([]byte("prefix"), &want); string(got) != string(w) {
				t.Errorf("round %d: AppendCanonical(%.30q) = %.60s, want %.60s", round, d, got, w)
			}
		}
	}
}

func TestWhitespaceRuns(t *testing.T) {
	card, err := os.ReadFile("../testdata/cards/027-a2a-go-json-test-georoute-planner.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Transform(card)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 20 {
		for _, prefix := range []string{"", "\t", "\r", " \t \r"} {
			var b bytes.Buffer
			if err := json.Indent(&b, want, prefix, strings.Repeat(" ", n)); err != nil {
				t.Fatal(err)
			}
			in := strings.Repeat(" ", n) + b.String() + strings.Repeat(" ", n)
			if got, err := Transform([]byte(in)); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Transform(indent %d, prefix %q) = %.80s, %v; want %.80s", n, prefix, got, err, want)
			}
		}
	}
}
