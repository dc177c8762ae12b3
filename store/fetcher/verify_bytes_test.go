package fetcher

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
)

// bigSignedCard is a card of about 1 MiB carrying n signatures whose
// protected headers each name a 7,100-byte kid (the shape of issue 19,
// row 3: 106 signatures keep 0.84 MiB of strings in one verification
// outcome). version makes the body, and so the outcome's cache key, unique.
func bigSignedCard(t testing.TB, s testSigner, version string, n int) []byte {
	t.Helper()
	kid := strings.Repeat("k", 7100)
	signer := testSigner{key: s.key, kid: kid}
	one := signer.sign(t, cardJSON(version, true), "")
	i := bytes.Index(one, []byte(`"signatures":[`))
	if i < 0 {
		t.Fatalf("no signatures in %s", one)
	}
	start := i + len(`"signatures":[`)
	end := start + bytes.IndexByte(one[start:], ']') // entries hold no arrays
	entry := one[start:end]
	var b bytes.Buffer
	b.Write(one[:start])
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(entry)
	}
	b.Write(one[end:])
	return b.Bytes()
}

// retained is the live heap after a full collection.
func retained() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestAdversarySignatureCacheBytes: verification outcomes of maximum-size
// signed cards (106 signatures with 7,100-byte kids each) fill the
// signature-result cache of a Fetcher with default options; the heap it
// retains stays within DefaultSignatureCacheBytes (32 MiB), where a cache
// bounded by count only (4,096 entries) keeps every one of them.
func TestAdversarySignatureCacheBytes(t *testing.T) {
	s := newTestSigner(t, "a")
	o := testOptions(newClock())
	o.Signatures = SignatureOptions{JKU: JKUOff, Trusted: signature.NewKeySet()} // no key: "no-key", no crypto
	f := newFetcher(t, o)
	ctx := context.Background()
	const cards, bound = 48, 32 << 20
	before := retained()
	perEntry := 0
	for i := range cards {
		raw := bigSignedCard(t, s, fmt.Sprint(i), 106)
		sigs := f.Verify(ctx, raw)
		if len(raw) > 1<<20 || len(sigs) == 0 {
			t.Fatalf("Verify(%d bytes) = %d signatures, want those of a card of at most 1 MiB", len(raw), len(sigs))
		}
		if i == 0 {
			for _, s := range sigs {
				perEntry += len(s.KeyID) + len(s.Alg) + len(s.Reason)
			}
		}
	}
	runtime.KeepAlive(f)
	after := retained()
	grew := int64(after) - int64(before)
	t.Logf("%d outcomes of %.2f MiB of strings each verified: the heap grew by %.1f MiB (bound %d MiB; a full count-bounded cache would keep %.1f GiB)",
		cards, float64(perEntry)/(1<<20), float64(grew)/(1<<20), bound>>20, float64(perEntry)*DefaultMaxSignatureResults/(1<<30))
	if grew > bound+bound/16 {
		t.Errorf("the signature-result cache retains %.1f MiB after %d outcomes of %.2f MiB, want at most %d MiB (+1/16 slack)",
			float64(grew)/(1<<20), cards, float64(perEntry)/(1<<20), bound>>20)
	}
}

// TestVerifyCacheBytes: the outcomes kept are bounded by CacheBytes as
// entrySize counts them, the least recently used evicted first; one larger
// than the bound is not kept; replacing or expiring an outcome gives its
// bytes back.
func TestVerifyCacheBytes(t *testing.T) {
	clk := newClock()
	o := testOptions(clk)
	sig := func(kid int) []detector.Signature {
		return []detector.Signature{{KeyID: strings.Repeat("k", kid), Alg: "ES256", Reason: "no-key"}}
	}
	size := entrySize(sig(10_000))
	o.Signatures = SignatureOptions{CacheBytes: 3*size + size/2}
	v := newFetcher(t, o).verify
	key := func(i int) [32]byte { return resultKey("", []byte(fmt.Sprint(i))) }
	check := func(what string, wantN int) {
		t.Helper()
		if n, b := v.Len(); n != wantN || b > o.Signatures.CacheBytes {
			t.Errorf("%s: %d outcomes of %d bytes, want %d within %d", what, n, b, wantN, o.Signatures.CacheBytes)
		}
		if err := v.results.check(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	for i := range 3 {
		v.put(key(i), cloneSignatures(sig(10_000)), time.Hour)
	}
	check("three", 3)
	v.get(key(0)) // 1 is now the least recently used
	v.put(key(3), cloneSignatures(sig(10_000)), time.Hour)
	check("a fourth evicts one", 3)
	if _, ok := v.get(key(1)); ok {
		t.Error("the least recently used outcome was kept")
	}
	if _, ok := v.get(key(0)); !ok {
		t.Error("a recently used outcome was evicted")
	}
	v.put(key(9), cloneSignatures(sig(int(4*size))), time.Hour)
	check("one larger than the bound", 3)
	if _, ok := v.get(key(9)); ok {
		t.Error("an outcome larger than CacheBytes was kept")
	}
	v.put(key(0), cloneSignatures(sig(10)), time.Hour)
	check("replaced by a small one", 3)
	clk.Advance(2 * time.Hour)
	for i := range 4 {
		v.get(key(i))
	}
	check("expired", 0)
	if got := entrySize(sig(100_000)); got < 100_000 {
		t.Errorf("entrySize of a 100,000-byte kid = %d", got)
	}
	if o := (SignatureOptions{CacheBytes: -1}); o.validate() == nil {
		t.Error("a negative CacheBytes validates")
	}
}

// FuzzSignatureCacheBytes: whatever sequence of outcomes of whatever sizes
// is kept, looked up or expired, the signature-result cache stays within
// CacheBytes and MaxResults, and its byte count is the sum of its entries.
// Each pair of input bytes is one step: op (put, get, advance the clock)
// and key or size.
func FuzzSignatureCacheBytes(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 1, 1, 0, 200, 2, 9, 1, 2})
	f.Add([]byte{0, 255, 0, 255, 0, 255, 0, 255})
	f.Add([]byte{0, 7, 0, 7, 0, 7, 2, 255, 1, 7})
	f.Fuzz(func(t *testing.T, steps []byte) {
		clk := newClock()
		o := testOptions(clk)
		o.Signatures = SignatureOptions{CacheBytes: 64 << 10, MaxResults: 8}
		fe, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer fe.Close()
		v := fe.verify
		for i := 0; i+1 < len(steps); i += 2 {
			op, arg := steps[i]%3, int(steps[i+1])
			key := resultKey("", []byte{byte(arg % 16)})
			switch op {
			case 0:
				sigs := []detector.Signature{{KeyID: strings.Repeat("k", arg*300), Alg: "ES256", Reason: "no-key"}}
				v.put(key, cloneSignatures(sigs), time.Duration(arg)*time.Second)
			case 1:
				v.get(key)
			case 2:
				clk.Advance(time.Duration(arg) * time.Second)
			}
			if n, b := v.Len(); n > o.Signatures.MaxResults || b > o.Signatures.CacheBytes {
				t.Fatalf("step %d: %d outcomes of %d bytes; bounds %d outcomes, %d bytes", i/2, n, b, o.Signatures.MaxResults, o.Signatures.CacheBytes)
			}
			if err := v.results.check(); err != nil {
				t.Fatalf("step %d: %v", i/2, err)
			}
		}
	})
}
