package fetcher

import (
	"context"
	"testing"
	"time"
)

// BenchmarkObserveLeaseHit is the cost of an Observe answered by a fresh lease
// (no request): what most capability-dependent transitions pay.
func BenchmarkObserveLeaseHit(b *testing.B) {
	benchObserve(b, newAgentB(b), Options{Allow: loopback})
}

// BenchmarkObserveRevalidate304 is the cost of a revalidation answered by 304
// over a kept-alive loopback connection.
func BenchmarkObserveRevalidate304(b *testing.B) {
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "no-cache")
	elapsed := benchObserve(b, a, Options{Allow: loopback, MinLease: -1})
	b.ReportMetric(float64(a.notModified.Load())/elapsed.Seconds(), "304/s")
}

// benchObserve measures Observe of a's card by a Fetcher with o, after a
// first Observe that fetches it, and returns how long the measured loop took.
func benchObserve(b *testing.B, a *agent, o Options) time.Duration {
	f, err := New(o)
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
	return time.Since(start)
}
