package jcs_test

import (
	"os"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
)

// BenchmarkTransform measures the canonicalizer alone on a real card and on
// hostile documents near the default 1 MiB limit, whose cost must stay
// linear (compare their MB/s with the card's).
func BenchmarkTransform(b *testing.B) {
	card, err := os.ReadFile("../testdata/cards/027-a2a-go-json-test-georoute-planner.json")
	if err != nil {
		b.Fatal(err)
	}
	const n = 1<<20 - 64
	wide := func(member func(i int) string) string {
		var s strings.Builder
		s.WriteString("{")
		for i := 0; s.Len() < n-64; i++ {
			if i > 0 {
				s.WriteString(",")
			}
			s.WriteString(member(i))
		}
		s.WriteString("}")
		return s.String()
	}
	inputs := []struct{ name, doc string }{
		{"card", string(card)},
		{"wide-object", wide(func(i int) string { return `"k` + strings.Repeat("x", i%7) + itoa(i) + `":1` })},
		{"many-32-member-objects", "[" + strings.Repeat(wide32()+",", n/(len(wide32())+1)-1) + "0]"},
		{"flat-array", "[" + strings.Repeat("1,", n/2-1) + "1]"},
		{"escapes", `"` + strings.Repeat(`\ud83d\ude00`, n/12-1) + `"`},
		{"long-number", "1." + strings.Repeat("3", n-3)},
		{"deep-at-limit", strings.Repeat(`{"a":[`, 32) + strings.Repeat(`]}`, 32)},
	}
	for _, in := range inputs {
		data := []byte(in.doc)
		if _, err := jcs.Transform(data); err != nil {
			b.Fatalf("%s: %v", in.name, err)
		}
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			dst := make([]byte, 0, 2*len(data))
			for b.Loop() {
				if _, err := jcs.AppendCanonical(dst[:0], data, jcs.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// wide32 is an object of 32 members in reverse key order: the worst case of
// the insertion sort.
func wide32() string {
	var s strings.Builder
	s.WriteString("{")
	for i := 31; i >= 0; i-- {
		s.WriteString(`"` + itoa(100+i) + `":0`)
		if i > 0 {
			s.WriteString(",")
		}
	}
	s.WriteString("}")
	return s.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
