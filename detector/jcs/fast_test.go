package jcs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// The fast canonicalizer (fast.go) against the tree path (Parse and
// Append), which stays as the oracle: where the fast path succeeds, the tree
// path must accept the input and write the same bytes; where it gives up,
// AppendCanonical's answer is the tree path's anyway.

// fastOptions are the option sets the differential checks run under: the
// defaults, the card digest's, a shallow depth limit and an omitted key that
// also appears deeper.
var fastOptions = []Options{
	{},
	{Omit: "signatures", RequireObject: true},
	{Limits: Limits{MaxDepth: 3}},
	{Omit: "a"},
}

// compareFast checks the fast path on data under opt against the tree
// path and reports whether the fast path succeeded.
func compareFast(t *testing.T, data []byte, opt Options) bool {
	t.Helper()
	if checkSize(data, opt.Limits) != nil {
		return false
	}
	src := unsafe.String(unsafe.SliceData(data), len(data))
	fast, ok := appendFast([]byte("prefix"), src, opt.Limits.maxDepth(), opt.Omit)
	slow, err := appendTree([]byte("prefix"), data, Options{Limits: opt.Limits, Omit: opt.Omit})
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%+v: fast path accepts %q as %q, the tree path rejects it: %v", opt, data, fast, err)
	}
	if !bytes.Equal(fast, slow) {
		t.Fatalf("%+v: fast path writes %q for %q, the tree path %q", opt, fast, data, slow)
	}
	got, err := AppendCanonical([]byte("prefix"), data, opt)
	want, wantErr := appendTree([]byte("prefix"), data, opt)
	if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%+v: AppendCanonical(%q) = %q, %v; tree path %q, %v", opt, data, got, err, want, wantErr)
	}
	return true
}

// fastSeeds are the real cards and vector inputs, and inputs aimed at what
// the fast path does itself (key ranks, escapes in values and keys, the
// omitted member, limits) or leaves to the streaming path.
func fastSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{"../testdata/cards/*.json", "testdata/cyberphone/input/*.json", "testdata/a2a-spec/*.json", "../testdata/digest/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, b)
		}
	}
	many := new(strings.Builder)
	many.WriteString("{")
	for i := range 70 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1`)
	}
	many.WriteString("}")
	wide := new(strings.Builder) // 40 members in reverse order
	wide.WriteString("{")
	for i := 40; i > 0; i-- {
		fmt.Fprintf(wide, `"m%02d":%d`, i, i)
		if i > 1 {
			wide.WriteString(",")
		}
	}
	wide.WriteString("}")
	for _, s := range []string{
		`{"abcdefgh2":1,"abcdefgh1":2,"abcdefgh":3,"abcdefg":4,"b":5,"":6}`,
		`{"b😀key":1,"b！key":2,"x𐀀end":3,"x` + "\ue000" + `end":4,"é":5,"e":6}`,
		`{"\u20ac":1,"a":2}`,
		`{"a":"tab\tx"}`,
		`{"a":"\u0000\u001f\u007f\"\\\/\b\f\n\r\t\ud83d\ude00\u00e9"}`,
		`{"a":"\ud800"}`,
		`{"a":"\udc00\ud800"}`,
		`{"a":"` + "\xff" + `"}`,
		`{"a":"` + "\xed\xa0\x80" + `"}`,
		`{"signatures":[1],"b":{"signatures":2},"a":3}`,
		`{"signatures":1,"signatures":2}`,
		`{"a":1,"a":2}`,
		`{"a":{"a":1},"b":[{"a":1,"a":2}]}`,
		`[[[[1]]]]`,
		`{"a":[{"b":[1]}]}`,
		`[1e400]`, `[-0,0.0,1E2,1.5e-7,123456789012345678,0.1]`, `[01]`, `[1.]`, `[-]`,
		`{"a":truex}`, `{"a":nul}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `[1 2]`, `  {"z" : [ true , false , null ] , "y" : "x" }  `,
		"{\"a\":1}\x00", `"just a string"`, `12`, ``, ` `,
		// numbers that grow leave dst little room: strings are then
		// copied byte by byte
		`[1e20,"abcdefghij"]`, `[1e20,"abcdefgh\u00e9ij"]`, `[1e20,{"abcdefghij":1,"abc":"éééééééé"}]`, `[1e20,"abc` + "\x7f" + `defghij"]`,
		"{\"a\":\"tab\tx\"}", "[\"\x01\"]", `["\n` + "\x01" + `"]`, `["\n` + "\xff" + `"]`, `["\né😀x"]`, `["\x"]`, `["\u12"]`, `["\u12x4"]`, `["ab\`, `["ab\n`, `[1`, `{"a":1`, `{"a"`,
		wide.String(),
		many.String(),
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

func TestFastCanonicalAgrees(t *testing.T) {
	for _, data := range fastSeeds(t) {
		for _, opt := range fastOptions {
			compareFast(t, data, opt)
		}
	}
}

// TestFastCanonicalTakesCards checks that the fast path is the one that
// canonicalizes real cards (it gives up only on rare shapes).
func TestFastCanonicalTakesCards(t *testing.T) {
	files, _ := filepath.Glob("../testdata/cards/*.json")
	digest, _ := filepath.Glob("../testdata/digest/*.json")
	files = append(files, digest...)
	if len(files) < 30 {
		t.Fatalf("%d cards found", len(files))
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !compareFast(t, b, Options{Omit: "signatures", RequireObject: true}) {
			t.Errorf("%s: the fast path gives up on it", path)
		}
	}
}

// TestKeyRank checks that ranks order keys as compareKeys does, where they
// differ.
func TestKeyRank(t *testing.T) {
	keys := []string{"", "a", "b", "ab", "abcdefgh", "abcdefgh1", "abcdefgi", "é", "\ue000", "\uffff", "😀", "𐀀", "a\ue000", "a😀", "~", "\u007f", "\u0080"}
	for _, a := range keys {
		for _, b := range keys {
			want := compareKeys(a, b)
			if got := compareRanked(keyRank(a), keyRank(b), a, b); got != want {
				t.Errorf("compareRanked(%q, %q) = %d, compareKeys %d", a, b, got, want)
			}
		}
	}
}

// FuzzFastCanonical checks the fast path against the tree path under
// each of fastOptions (seed corpus: testdata/fuzz/FuzzFastCanonical and
// fastSeeds).
func FuzzFastCanonical(f *testing.F) {
	for _, s := range fastSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opt := range fastOptions {
			compareFast(t, data, opt)
		}
	})
}

// BenchmarkFastCanonical times the fast path and the tree path
// alternately on the digest benchmark cards, so that machine noise hits both
// alike, and reports the tree path's time over the fast path's.
func BenchmarkFastCanonical(b *testing.B) {
	for _, size := range []string{"1k", "4k", "64k"} {
		data, err := os.ReadFile("../testdata/digest/card-" + size + ".json")
		if err != nil {
			b.Fatal(err)
		}
		src := unsafe.String(unsafe.SliceData(data), len(data))
		opt := Options{Omit: "signatures", RequireObject: true}
		b.Run(size, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(data))
			var fast, slow time.Duration
			for i := 0; b.Loop(); i++ {
				// Each goes first every other time: the second one finds
				// the caches warm.
				t0 := time.Now()
				if i%2 == 0 {
					if _, ok := appendFast(buf, src, DefaultMaxDepth, opt.Omit); !ok {
						b.Fatal("fast path gave up")
					}
				} else if _, err := appendTree(buf, data, opt); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if i%2 != 0 {
					if _, ok := appendFast(buf, src, DefaultMaxDepth, opt.Omit); !ok {
						b.Fatal("fast path gave up")
					}
				} else if _, err := appendTree(buf, data, opt); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if i%2 == 0 {
					fast, slow = fast+t1.Sub(t0), slow+t2.Sub(t1)
				} else {
					slow, fast = slow+t1.Sub(t0), fast+t2.Sub(t1)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(fast.Nanoseconds())/n, "fast-ns/op")
			b.ReportMetric(float64(slow.Nanoseconds())/n, "tree-ns/op")
			b.ReportMetric(float64(slow)/float64(fast), "speedup")
		})
	}
}

// TestRankAt checks the one-word rank against keyRank at every key length
// and at the end of the input.
func TestRankAt(t *testing.T) {
	for _, s := range []string{`"abcdefghij"`, `"ab"`, `"é😀\ue000x"`, `"~~~~~~~~~~"`} {
		for i := 1; i < len(s); i++ {
			for n := 0; i+n <= len(s); n++ {
				if got, want := rankAt(s, i, n), keyRank(s[i:i+n]); got != want {
					t.Errorf("rankAt(%q, %d, %d) = %#x, keyRank %#x", s, i, n, got, want)
				}
			}
		}
	}
}

// TestFastMemberOrders runs objects of the same keys in every order, with
// keys that share their first eight bytes (equal ranks), and with a
// duplicate key, which the fast path finds only once the members are in
// order and must leave to the tree path. Objects over sortInPlaceMax
// members are sorted otherwise, and checked for duplicates the same way.
func TestFastMemberOrders(t *testing.T) {
	keys := []string{"b", "abcdefgh2", "a", "abcdefgh1", "abcdefgh", "c"}
	var permute func(k int)
	permute = func(k int) {
		if k == len(keys) {
			var doc, dup, nested strings.Builder
			doc.WriteString("{")
			for i, key := range keys {
				if i > 0 {
					doc.WriteString(",")
				}
				fmt.Fprintf(&doc, "%q:%d", key, i)
			}
			fmt.Fprintf(&dup, `%s,%q:0}`, doc.String(), keys[len(keys)/2])
			fmt.Fprintf(&nested, `[%s},{"x":%s}}]`, doc.String(), doc.String())
			doc.WriteString("}")
			for _, opt := range fastOptions {
				if !compareFast(t, []byte(doc.String()), opt) || !compareFast(t, []byte(nested.String()), opt) {
					t.Fatalf("%+v: the fast path gives up on %s", opt, doc.String())
				}
				if compareFast(t, []byte(dup.String()), opt) {
					t.Fatalf("%+v: the fast path takes %s", opt, dup.String())
				}
			}
			return
		}
		for i := k; i < len(keys); i++ {
			keys[k], keys[i] = keys[i], keys[k]
			permute(k + 1)
			keys[k], keys[i] = keys[i], keys[k]
		}
	}
	permute(0)
	for _, n := range []int{sortInPlaceMax, sortInPlaceMax + 1, dupMapAt - 2} {
		for _, dupAt := range []int{-1, 0, n / 2, n - 1} {
			var doc strings.Builder
			doc.WriteString("{")
			for i := n; i > 0; i-- {
				fmt.Fprintf(&doc, `"m%02d":%d,`, i, i)
			}
			if dupAt >= 0 {
				fmt.Fprintf(&doc, `"m%02d":0}`, n-dupAt)
			} else {
				doc.WriteString(`"m":0}`)
			}
			if ok := compareFast(t, []byte(doc.String()), Options{}); ok != (dupAt < 0) {
				t.Errorf("%d members, duplicate at %d: fast path ok = %v", n+1, dupAt, ok)
			}
		}
	}
}

// TestPlainEnd checks plainEnd against specialBytes: the same words flagged,
// at the same lowest byte, for words of every pair of interesting bytes at
// every pair of positions and for random words.
func TestPlainEnd(t *testing.T) {
	check := func(w uint64) {
		a, b := specialBytes(w), plainEnd(w)
		if (a == 0) != (b == 0) || a != 0 && bits.TrailingZeros64(a) != bits.TrailingZeros64(b) {
			t.Fatalf("%#016x: specialBytes %#x, plainEnd %#x", w, a, b)
		}
	}
	var edge []byte
	for _, c := range []int{0, 1, 0x1f, 0x20, 0x21, '"', 0x23, '[', '\\', ']', 0x7e, 0x7f, 0x80, 0x81, 0x9f, 0xa0, 0xa1, 0xa2, 0xdc, 0xdd, 0xdf, 0xe0, 0xfe, 0xff} {
		edge = append(edge, byte(c))
	}
	for _, fill := range []byte{'a', 0x80, 0x20, 0x7f} {
		for p := range 8 {
			for q := range 8 {
				for _, x := range edge {
					for _, y := range edge {
						var b [8]byte
						for k := range b {
							b[k] = fill
						}
						b[p], b[q] = x, y
						check(binary.LittleEndian.Uint64(b[:]))
					}
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(r.Uint64())
	}
}
