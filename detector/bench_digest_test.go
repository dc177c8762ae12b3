package detector

import (
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	gowebpki "github.com/gowebpki/jcs"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Benchmark inputs, built from the fixture cards (see testdata/digest/README.md).
var digestBenchCards = []struct{ size, file string }{
	{"1KiB", "testdata/digest/card-1k.json"},
	{"4KiB", "testdata/digest/card-4k.json"},
	{"64KiB", "testdata/digest/card-64k.json"},
}

// gowebpkiDigest is the baseline: an independent RFC 8785 implementation,
// SHA-256 over its output and the digest written as Digest writes it. It
// does not strip "signatures": see sameFormDigest.
func gowebpkiDigest(raw []byte) (string, error) {
	c, err := gowebpki.Transform(raw)
	if err != nil {
		return "", err
	}
	return formatDigest(sha256.Sum256(c)), nil
}

// sameFormDigest is the uncached digest of carddrift over the canonical form
// gowebpkiDigest hashes: the whole card, "signatures" kept, so that both
// sides of BenchmarkDigestRatio do the same work and return the same string.
func sameFormDigest(raw []byte) (string, error) {
	return digestWith(raw, jcs.Options{RequireObject: true})
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
// over gowebpki/jcs + SHA-256 (goal: >= 10 at every size). What is timed:
// on both sides, from the same input bytes (the card as served, indented,
// keys unsorted) to the same "sha256:<hex>" string of the same canonical
// form (the whole card: gowebpki cannot leave "signatures" out, so
// carddrift keeps it here too; the two digests are checked equal before
// timing). carddrift's side is uncached (sameFormDigest: no digest memo, no
// state kept between calls but pooled buffers); gowebpki's is
// Transform + sha256.Sum256. The two are timed alternately on every
// iteration, each first every other time, so machine noise and warm caches
// hit both alike. speedup is the ratio of the total times (the figure to
// quote from a quiet machine); speedup-min that of the fastest call of each,
// the least disturbed by other processes, which a loaded machine moves less
// (there a call of gowebpki's, ten times longer, is preempted more often,
// and the totals scatter by a factor of several). (testing.Benchmark cannot
// be nested inside a running benchmark: it would wait for the lock the
// running benchmark holds.)
func BenchmarkDigestRatio(b *testing.B) {
	for _, c := range digestBenchCards {
		raw := mustRead(b, c.file)
		ours, err := sameFormDigest(raw)
		if err != nil {
			b.Fatal(err)
		}
		if theirs, err := gowebpkiDigest(raw); err != nil || theirs != ours {
			b.Fatalf("%s: carddrift %s, gowebpki %s, %v", c.file, ours, theirs, err)
		}
		b.Run(c.size, func(b *testing.B) {
			var ours, theirs []time.Duration
			time1 := func(digest func([]byte) (string, error)) time.Duration {
				t0 := time.Now()
				if _, err := digest(raw); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					ours = append(ours, time1(sameFormDigest))
					theirs = append(theirs, time1(gowebpkiDigest))
				} else {
					theirs = append(theirs, time1(gowebpkiDigest))
					ours = append(ours, time1(sameFormDigest))
				}
			}
			sum := func(d []time.Duration) (t time.Duration) {
				for _, x := range d {
					t += x
				}
				return t
			}

			n := float64(b.N)
			b.ReportMetric(float64(sum(ours).Nanoseconds())/n, "carddrift-ns/op")
			b.ReportMetric(float64(sum(theirs).Nanoseconds())/n, "gowebpki-ns/op")
			b.ReportMetric(float64(sum(theirs))/float64(sum(ours)), "speedup")
			b.ReportMetric(float64(slices.Min(theirs))/float64(slices.Min(ours)), "speedup-min")
		})
	}
}

// BenchmarkDigestParts splits the uncached digest of BenchmarkDigestRatio
// (sameFormDigest) into its parts per input size: <size>/canonical is
// jcs.AppendCanonical into a buffer with room, <size>/sha256 the SHA-256 of
// the canonical form, <size>/all the whole call (both, the pools and the
// "sha256:<hex>" string). On a loaded machine, count instructions instead
// of timing (see test/README.md's figures): under callgrind with GOGC=off and
// -test.benchtime 40000x, the self cost of the functions it runs divided by
// 40,000 is the same from run to run.
func BenchmarkDigestParts(b *testing.B) {
	opt := jcs.Options{RequireObject: true}
	for _, c := range digestBenchCards {
		raw := mustRead(b, c.file)
		canon, err := jcs.AppendCanonical(nil, raw, opt)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, 0, 2*len(raw))
		b.Run(c.size+"/canonical", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := jcs.AppendCanonical(dst[:0], raw, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.size+"/sha256", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				sha256.Sum256(canon)
			}
		})
		b.Run(c.size+"/all", func(b *testing.B) { benchDigest(b, raw, sameFormDigest) })
	}
}
