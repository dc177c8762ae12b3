package detector

import (
	"crypto/sha256"
	"testing"
	"time"

	gowebpki "github.com/gowebpki/jcs"
)

// Benchmark inputs, built from the fixture cards (see testdata/digest/README.md).
var digestBenchCards = []struct{ size, file string }{
	{"1KiB", "testdata/digest/card-1k.json"},
	{"4KiB", "testdata/digest/card-4k.json"},
	{"64KiB", "testdata/digest/card-64k.json"},
}

// gowebpkiDigest is the baseline: an independent RFC 8785 implementation
// plus SHA-256 over the same bytes. (It does not strip "signatures", which
// only makes its work larger by the few bytes of that member.)
func gowebpkiDigest(raw []byte) ([32]byte, error) {
	c, err := gowebpki.Transform(raw)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(c), nil
}

// benchDigest times digest on raw.
func benchDigest[T any](b *testing.B, raw []byte, digest func([]byte) (T, error)) {
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := digest(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDigest measures the card digest per input size: <size>/carddrift is
// the uncached path (canonicalize + SHA-256, memo bypassed), <size>/gowebpki
// is github.com/gowebpki/jcs Transform + SHA-256 on the same bytes, and
// <size>/memo is Digest on a body it has seen (a hit: a seeded hash of the
// body, a map lookup and a comparison with the body held; goal: under 1 µs
// for a card of a few KiB).
func BenchmarkDigest(b *testing.B) {
	for _, c := range digestBenchCards {
		raw := mustRead(b, c.file)
		b.Run(c.size+"/carddrift", func(b *testing.B) { benchDigest(b, raw, digestUncached) })
		b.Run(c.size+"/gowebpki", func(b *testing.B) { benchDigest(b, raw, gowebpkiDigest) })
		b.Run(c.size+"/memo", func(b *testing.B) {
			if _, err := Digest(raw); err != nil {
				b.Fatal(err)
			}
			benchDigest(b, raw, Digest)
		})
	}
}

// BenchmarkDigestRatio reports, per input size, the speedup of carddrift
// (uncached) over gowebpki + SHA-256 (goal: >= 10 at every size). The two are
// timed alternately on every iteration, so machine noise hits both alike.
// (testing.Benchmark cannot be nested inside a running benchmark: it would
// wait for the lock the running benchmark holds.)
func BenchmarkDigestRatio(b *testing.B) {
	for _, c := range digestBenchCards {
		raw := mustRead(b, c.file)
		b.Run(c.size, func(b *testing.B) {
			var ours, theirs time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := digestUncached(raw); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := gowebpkiDigest(raw); err != nil {
					b.Fatal(err)
				}
				ours += t1.Sub(t0)
				theirs += time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(ours.Nanoseconds())/n, "carddrift-ns/op")
			b.ReportMetric(float64(theirs.Nanoseconds())/n, "gowebpki-ns/op")
			b.ReportMetric(float64(theirs)/float64(ours), "speedup")
		})
	}
}
