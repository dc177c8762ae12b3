package worker

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
)

// testCard parses a card of about kib KiB, distinct per i: one long
// description, or (many) many small skills, the shape whose parsed model
// outweighs its body most.
func testCard(t testing.TB, i, kib int, many bool) (string, *detector.Card) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"card %d","version":"1","url":"https://a.example","protocolVersion":"0.3.0","capabilities":{},`+
		`"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[`, i)
	if many {
		for j := 0; b.Len() < kib<<10; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"s%d","name":"n","description":"d","tags":["t"],"inputModes":["a/b"]}`, j)
		}
		b.WriteString(`]}`)
	} else {
		b.WriteString(`{"id":"s","name":"s","description":"s","tags":["t"]}],"description":"`)
		b.WriteString(strings.Repeat("x", max(kib<<10-b.Len()-2, 0)))
		b.WriteString(`"}`)
	}
	raw := []byte(b.String())
	c, err := detector.Parse(raw)
	if err != nil {
		t.Fatalf("Parse(card %d): %v", i, err)
	}
	d, err := detector.Digest(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

func TestCardCacheEvictsByBytes(t *testing.T) {
	d0, c0 := testCard(t, 0, 100, false)
	one := cardSize(d0, c0)
	c := newCardCache(1000, 3*one+one/2)
	c.put(d0, c0)
	for i := 1; i < 3; i++ {
		c.put(testCard(t, i, 100, false))
	}
	if n, b := c.stats(); n != 3 || b > 3*one+one/2 {
		t.Fatalf("stats() after 3 cards = %d cards, %d bytes; want 3 within %d", n, b, 3*one+one/2)
	}
	d3, c3 := testCard(t, 3, 100, false)
	c.put(d3, c3)
	if n, b := c.stats(); n != 3 || b > 3*one+one/2 {
		t.Fatalf("stats() after a 4th card = %d cards, %d bytes; want 3 within %d", n, b, 3*one+one/2)
	}
	if _, ok := c.get(d0); ok {
		t.Error("the oldest card is still cached")
	}
	if got, ok := c.get(d3); !ok || got != c3 {
		t.Error("the newest card is not cached")
	}
	// A card larger than the whole bound is not cached and evicts nothing.
	dBig, cBig := testCard(t, 4, 400, false)
	c.put(dBig, cBig)
	if _, ok := c.get(dBig); ok {
		t.Error("a card larger than the bound was cached")
	}
	if n, _ := c.stats(); n != 3 {
		t.Errorf("stats() after an oversize card = %d cards, want 3", n)
	}
	// The count bound still holds.
	small := newCardCache(2, 1<<40)
	for i := range 5 {
		small.put(testCard(t, i, 1, true))
	}
	if n, _ := small.stats(); n != 2 {
		t.Errorf("count-bounded cache holds %d cards, want 2", n)
	}
}

// TestCardSizeCoversHeap checks the card cache's estimate against the heap:
// the parsed cards of both shapes keep live no more than cardSize says, so
// a full cache stays in its bound.
func TestCardSizeCoversHeap(t *testing.T) {
	for _, many := range []bool{false, true} {
		const n = 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		keep := make([]*detector.Card, n)
		var est int64
		for i := range keep {
			var d string
			d, keep[i] = testCard(t, i, 256, many)
			est += cardSize(d, keep[i])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(keep)
		if live > est {
			t.Errorf("many skills %v: %d cards keep %d bytes live, cardSize estimates %d: under", many, n, live, est)
		}
		t.Logf("many skills %v: %d parsed 256 KiB cards: live %d bytes, estimated %d (%.2f)", many, n, live, est, float64(est)/float64(live))
	}
}
