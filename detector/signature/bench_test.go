package signature

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector/jcs/jcstest"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
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

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWorst verifies, in one loop, the dearest card a publisher can
// write and a normal signed card, and reports both side by side:
//
//   - issue-body: issue 19's card, 16 ES512 signatures whose kid names 100
//     P-521 keys, over three distinct canonical forms (4,800 verifications
//     and about 17 s of CPU before Limits);
//   - within-limits: the same with two keys under the kid, the most a
//     signature may have tried: the card's whole budget of operations is
//     spent;
//   - normal: the JS SDK agent's card signed once with ES512 over the SDK
//     form (two operations: the served form first).
//
// Metrics: worst-ns/op and normal-ns/op (wall time of one verification),
// worst-cpu-ns/op and normal-cpu-ns/op (process CPU during it: steadier
// than wall time on a shared machine), worst-ops (public-key operations the
// worst one made) and worst/normal-cpu (the ratio of their CPU). Run with
//
//	go test ./detector/signature -run '^$' -bench Worst -benchtime 20x
func BenchmarkWorst(b *testing.B) {
	card := jcstest.ReadFile(b, "testdata/cards/jssdk-v1.0.json")
	normal, jwk := mustSign(b, card, "ES512", "bench-normal", SignOptions{})
	normalKeys := keySet(b, jwk)
	for _, tc := range []struct {
		name string
		keys int
	}{{"issue-body", 100}, {"within-limits", DefaultKeysPerSignature}} {
		b.Run(tc.name, func(b *testing.B) {
			worst, worstKeys := hostile(b, signaturetest.Hostile{Keys: tc.keys})
			ctx := context.Background()
			var worstWall, worstCPU, normalWall, normalCPU time.Duration
			var ops int
			for b.Loop() {
				c0, t0 := cpuTime(b), time.Now()
				ops += opsDuring(func() {
					if res, err := Verify(ctx, worst, worstKeys); err != nil || len(res) != 16 || res[15].Reason != ReasonOverLimit {
						b.Fatalf("Verify(worst) = %+v, %v", res, err)
					}
				})
				c1, t1 := cpuTime(b), time.Now()
				if res, err := Verify(ctx, normal, normalKeys); err != nil || !res[0].Verified {
					b.Fatalf("Verify(normal) = %+v, %v", res, err)
				}
				c2, t2 := cpuTime(b), time.Now()
				worstWall, worstCPU = worstWall+t1.Sub(t0), worstCPU+c1-c0
				normalWall, normalCPU = normalWall+t2.Sub(t1), normalCPU+c2-c1
			}
			n := float64(b.N)
			b.ReportMetric(float64(worstWall.Nanoseconds())/n, "worst-ns/op")
			b.ReportMetric(float64(worstCPU.Nanoseconds())/n, "worst-cpu-ns/op")
			b.ReportMetric(float64(normalWall.Nanoseconds())/n, "normal-ns/op")
			b.ReportMetric(float64(normalCPU.Nanoseconds())/n, "normal-cpu-ns/op")
			b.ReportMetric(float64(ops)/n, "worst-ops")
			b.ReportMetric(float64(worstCPU)/float64(normalCPU), "worst/normal-cpu")
		})
	}
}
