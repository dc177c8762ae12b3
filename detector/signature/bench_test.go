package signature

import (
	"context"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs/jcstest"
)

// BenchmarkCanonical measures each form of the JS SDK agent's served card
// (2.5 KB).
func BenchmarkCanonical(b *testing.B) {
	card := jcstest.ReadFile(b, "testdata/cards/jssdk-v1.0.json")
	for _, f := range Forms() {
		b.Run(string(f), func(b *testing.B) {
			b.SetBytes(int64(len(card)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(card, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerify verifies one signed card against a static key set: parse,
// canonical form, one signature check. The card is the JS SDK agent's,
// signed over the SDK form, so the served form is tried (and fails) first.
func BenchmarkVerify(b *testing.B) {
	card := jcstest.ReadFile(b, "testdata/cards/jssdk-v1.0.json")
	for _, alg := range []string{"ES256", "ES384", "RS256", "PS256", "EdDSA"} {
		b.Run(alg, func(b *testing.B) {
			signed, jwk := mustSign(b, card, alg, "bench", SignOptions{})
			keys := keySet(b, jwk)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := Verify(ctx, signed, keys)
				if err != nil || !res[0].Verified {
					b.Fatalf("Verify = %+v, %v", res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/verify")
		})
	}
}
