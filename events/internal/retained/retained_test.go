package retained

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type record struct {
	Name  string
	Tags  []string
	Raw   []byte
	At    time.Time
	Attrs map[string][]string
	Next  *record
	Any   any
}

func TestSize(t *testing.T) {
	self := int64(unsafe.Sizeof(record{}))
	shared := &record{Name: "shared"}
	for _, tc := range []struct {
		name string
		v    any
		want int64
	}{
		{"nil", nil, 0},
		{"int", 7, 8},
		{"empty", record{}, self},
		{"string", record{Name: "abcd"}, self + 8},
		{"bytes by capacity", record{Raw: make([]byte, 3, 100)}, self + 112},
		{"strings", record{Tags: []string{"ab", "cde"}}, self + 32 + 8 + 8},
		{"pointer", record{Next: &record{Name: "xy"}}, self + alloc(self) + 8},
		{"shared pointer counted once", []*record{shared, shared}, 24 + 16 + alloc(self) + 8},
		{"cycle", func() any { r := &record{}; r.Next = r; return r }(), 8 + alloc(self)},
		{"interface", record{Any: "abc"}, self + 16 + 8},
		{"map", record{Attrs: map[string][]string{"k": {"v"}}}, self + MapOverhead + 2*(16+24) + 8 + 16 + 8},
		{"time not followed", record{At: time.Now()}, self},
	} {
		if got := Size(tc.v); got != tc.want {
			t.Errorf("Size(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSizeCoversHeap checks the estimate against the heap: what a batch of
// values keeps live (runtime.MemStats after GC) is not more than Size says,
// give or take allocation rounding.
func TestAlloc(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{{0, 0}, {1, 8}, {8, 8}, {9, 16}, {33, 48}, {32768, 32768}, {32769, 40960}, {1 << 20, 1 << 20}} {
		if got := alloc(tc.n); got != tc.want {
			t.Errorf("alloc(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestSizeCoversHeap(t *testing.T) {
	const n = 2000
	build := func(i int) *record {
		r := &record{Name: strings.Repeat("n", 100+i%7), Attrs: map[string][]string{}}
		for j := range 20 {
			r.Tags = append(r.Tags, strings.Repeat("t", 30+j))
			r.Attrs[strings.Repeat("k", 5+j)] = []string{strings.Repeat("v", 10)}
		}
		r.Raw = make([]byte, 1000)
		return r
	}
	var est int64
	for i := range n {
		est += Size(build(i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := make([]*record, n)
	for i := range keep {
		keep[i] = build(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(n*8)
	runtime.KeepAlive(keep)
	// Allocation size classes round every object up (at most 1/8 for these
	// sizes, plus the map's buckets): allow a quarter.
	if live > est+est/4 {
		t.Errorf("%d records keep %d bytes live, Size estimates %d: under by more than a quarter", n, live, est)
	}
	t.Logf("%d records: live %d bytes, estimated %d (%.2f)", n, live, est, float64(est)/float64(live))
}
