package store_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// BenchmarkPinLookup compares, in one run on one embedded server, a pin
// lookup through CachedPins (warm) with the baseline it replaces on the hot
// path: a direct KV Get of the same pin plus its JSON decode. The cached
// sub-benchmark reports the ratio to the kv-get one as "x-kv-get".
func BenchmarkPinLookup(b *testing.B) {
	const pins = 1000
	js := startJS(b)
	ctx := context.Background()
	st, err := store.Open[testRecord](ctx, js, store.Config{})
	if err != nil {
		b.Fatalf("Open() error = %v", err)
	}
	ids := make([]string, pins)
	for i := range ids {
		ids[i] = "task-" + strconv.Itoa(i)
		if _, err := st.Pins.Create(ctx, testPin(ids[i], i)); err != nil {
			b.Fatalf("Create() error = %v", err)
		}
	}
	var kvNsPerOp float64

	b.Run("kv-get", func(b *testing.B) {
		kv := st.Pins.KV()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e, err := kv.Get(ctx, store.EncodeKey(ids[i%pins]))
			if err != nil {
				b.Fatalf("kv.Get() error = %v", err)
			}
			var p testRecord
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				b.Fatalf("json.Unmarshal() error = %v", err)
			}
		}
		kvNsPerOp = reportRate(b)
	})

	b.Run("cached", func(b *testing.B) {
		c := store.NewCachedPins(st.Pins, pins)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(runCtx) }()
		defer func() {
			cancel()
			<-done
		}()
		<-c.Ready()
		for _, id := range ids { // warm
			if _, _, err := c.Get(ctx, id); err != nil {
				b.Fatalf("Get() error = %v", err)
			}
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, _, err := c.Get(ctx, ids[i%pins]); err != nil {
				b.Fatalf("Get() error = %v", err)
			}
		}
		ns := reportRate(b)
		if kvNsPerOp > 0 && ns > 0 {
			b.ReportMetric(kvNsPerOp/ns, "x-kv-get")
		}
		if st := c.Stats(); st.Misses != pins {
			b.Fatalf("misses = %d, want %d (only the warm-up)", st.Misses, pins)
		}
	})
}

// reportRate reports ops/s and returns ns/op of the benchmark so far.
func reportRate(b *testing.B) float64 {
	el := b.Elapsed()
	if el <= 0 || b.N == 0 {
		return 0
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
	return float64(el.Nanoseconds()) / float64(b.N)
}
