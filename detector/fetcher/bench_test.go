package fetcher

import (
	"context"
	"testing"
	"time"
)

// BenchmarkObserveLeaseHit is the cost of an Observe answered by a fresh lease
// (no request): what most capability-dependent transitions pay.
func BenchmarkObserveLeaseHit(b *testing.B) {
	a := newAgentB(b)
	f, err := New(Options{Allow: loopback})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	url := a.url("/card")
	if _, err := f.Observe(ctx, url, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObserveRevalidate304 is the cost of a revalidation answered by 304
// over a kept-alive loopback connection.
func BenchmarkObserveRevalidate304(b *testing.B) {
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "no-cache")
	f, err := New(Options{Allow: loopback, MinLease: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	url := a.url("/card")
	if _, err := f.Observe(ctx, url, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := f.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(a.notModified.Load())/time.Since(start).Seconds(), "304/s")
}
