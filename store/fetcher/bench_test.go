package fetcher

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
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

// BenchmarkObserveSharedLease is an Observe answered by a fresh lease in a
// JetStream bucket, through the lease copy ("copy") and with a store read
// ("store", LeaseCopyBytes negative: what every one cost before), the two
// Fetchers taking turns so that machine noise hits both alike: ns per
// Observe of each and their ratio.
//
//	go test ./store/fetcher -run '^$' -bench ObserveSharedLease -benchtime 5000x
func BenchmarkObserveSharedLease(b *testing.B) {
	_, _, js := natstest.StartJetStream(b)
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "leases", History: 1})
	if err != nil {
		b.Fatal(err)
	}
	leases := store.NewKVLeases(kv)
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "max-age=3600")
	url := a.url("/card")
	ctx := context.Background()
	mk := func(copyBytes int64) *Fetcher {
		f, err := New(Options{Allow: loopback, Leases: leases, LeaseCopyBytes: copyBytes})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = f.Close() })
		if _, err := f.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
		return f
	}
	local, remote := mk(0), mk(-1)
	natstest.Eventually(b, 10*time.Second, "the copy answers", func() bool {
		_, _, ok := local.copy.get(store.EncodeKey(url))
		return ok
	})
	var tl, tr time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := local.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := remote.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
		tl += t1.Sub(t0)
		tr += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(tl.Nanoseconds())/float64(n), "copy-ns/observe")
	b.ReportMetric(float64(tr.Nanoseconds())/float64(n), "store-ns/observe")
	b.ReportMetric(float64(tr)/float64(tl), "store/copy")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkObserveRevalidateKV is a revalidation answered by 304 with the
// lease in a JetStream bucket (the lease copy on), its lease expired before
// every Observe: the lease writes each fetch costs ("writes/fetch", the
// bucket's revisions per request), how many of those writes the copy's
// watch decoded when it delivered them back ("decoded/write"), and its
// time.
//
//	go test ./store/fetcher -run '^$' -bench ObserveRevalidateKV -benchtime 2000x
func BenchmarkObserveRevalidateKV(b *testing.B) {
	_, _, js := natstest.StartJetStream(b)
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "leases", History: 1})
	if err != nil {
		b.Fatal(err)
	}
	leases := &followCount{KVLeases: store.NewKVLeases(kv)}
	a := newAgentB(b)
	a.set(cardJSON("1", true), `"v1"`, "max-age=1")
	clk := newClock()
	f, err := New(Options{Allow: loopback, Leases: leases, Now: clk.Now, FullFetchInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	url := a.url("/card")
	if _, err := f.Observe(ctx, url, false); err != nil {
		b.Fatal(err)
	}
	head0, err := leases.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	delivered(b, f, head0)
	req0, decoded0 := a.requests.Load(), leases.decoded.Load()
	b.ReportAllocs()
	for b.Loop() {
		clk.Advance(2 * time.Second)
		if _, err := f.Observe(ctx, url, false); err != nil {
			b.Fatal(err)
		}
	}
	head, err := leases.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	delivered(b, f, head)
	b.ReportMetric(float64(head-head0)/float64(a.requests.Load()-req0), "writes/fetch")
	b.ReportMetric(float64(leases.decoded.Load()-decoded0)/float64(head-head0), "decoded/write")
}

// delivered waits until f's lease copy has been delivered every write up
// to head.
func delivered(tb testing.TB, f *Fetcher, head uint64) {
	natstest.Eventually(tb, 10*time.Second, "the watch delivers every write", func() bool {
		f.copy.mu.Lock()
		defer f.copy.mu.Unlock()
		return f.copy.applied >= head
	})
}
