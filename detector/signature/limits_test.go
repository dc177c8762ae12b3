package signature

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector/jcs/jcstest"
	"github.com/carddrift/carddrift/detector/signature/signaturetest"
)

// opsDuring returns how many public-key operations f made (the package's
// own count, kept in JWS.verify: independent of the verifier's bookkeeping).
// The tests of this package do not run in parallel.
func opsDuring(f func()) int {
	before := operations.Load()
	f()
	return int(operations.Load() - before)
}

// hostile builds a signaturetest card and its key set, parsed.
func hostile(t testing.TB, h signaturetest.Hostile) ([]byte, *KeySet) {
	t.Helper()
	card, jwks, err := h.Build()
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseJWKS(jwks)
	if err != nil || len(set.Skipped()) > 0 {
		t.Fatalf("ParseJWKS: %v %v", err, set.Skipped())
	}
	return card, set
}

func TestDefaultLimits(t *testing.T) {
	d := DefaultLimits()
	want := Limits{Signatures: 16, KeysPerSignature: 2, Forms: 3, Operations: 8, Time: 2 * time.Second}
	if d != want {
		t.Errorf("DefaultLimits() = %+v, want %+v", d, want)
	}
	if got := (Limits{}).withDefaults(); got != d {
		t.Errorf("Limits{} with defaults = %+v", got)
	}
	if got := (Limits{Forms: 9, Operations: -1}).withDefaults(); got.Forms != 3 || got.Operations != DefaultOperations {
		t.Errorf("Limits{Forms: 9, Operations: -1} with defaults = %+v", got)
	}
}

// TestHostileForms: the hostile card has three distinct canonical forms, so
// a verifier without limits tries each.
func TestHostileForms(t *testing.T) {
	seen := map[string]Form{}
	for _, f := range Forms() {
		c, err := Canonical([]byte(signaturetest.HostileCard), f)
		if err != nil {
			t.Fatal(err)
		}
		if g, dup := seen[string(c)]; dup {
			t.Errorf("forms %s and %s of the hostile card are the same bytes", g, f)
		}
		seen[string(c)] = f
	}
}

// TestLimitsHostile: the body of issue 19 (16 ES512 signatures, a kid naming
// 100 keys, three forms) costs no public-key operation at all, every
// signature over-limit; the dearest body within the limits (a kid naming
// two keys) costs exactly the budget.
func TestLimitsHostile(t *testing.T) {
	card, set := hostile(t, signaturetest.Hostile{Keys: 100})
	var res []Result
	var err error
	if ops := opsDuring(func() { res, err = Verify(context.Background(), card, set) }); ops != 0 || err != nil {
		t.Errorf("Verify(issue body): %d operations, %v; want 0", ops, err)
	}
	for _, r := range res {
		if r.Reason != ReasonOverLimit || r.Verified || r.Thumbprint != set.Keys()[0].Thumbprint || !strings.Contains(r.Detail, "100 keys") {
			t.Errorf("result %d = %+v; want over-limit (100 keys) with the first key's thumbprint", r.Index, r)
		}
	}
	if len(res) != 16 {
		t.Errorf("%d results, want 16", len(res))
	}

	// The operation budget, not the clock, is under test: the time backstop
	// (DefaultTime) may stop 8 ES512 operations early on a loaded machine
	// under -race, so it is lifted here (TestLimitsTime tests it).
	card, set = hostile(t, signaturetest.Hostile{Keys: 2})
	untimed := DefaultLimits()
	untimed.Time = time.Hour
	if ops := opsDuring(func() { res, err = untimed.Verify(context.Background(), card, set) }); ops != DefaultOperations || err != nil {
		t.Errorf("Verify(two keys per kid): %d operations, %v; want %d", ops, err, DefaultOperations)
	}
	for _, r := range res {
		want := ReasonOverLimit
		if r.Index == 0 { // 2 keys × 3 forms = 6 operations, all failed
			want = ReasonInvalidSignature
		}
		if r.Reason != want {
			t.Errorf("result %d = %+v; want %s", r.Index, r, want)
		}
	}
}

// TestLimitsKeysPerSignature: a kid that names more keys than the limit is
// over-limit before any operation, even when one of them would verify.
func TestLimitsKeysPerSignature(t *testing.T) {
	signed, jwk := mustSign(t, []byte(baseCard), "ES256", "main", SignOptions{})
	var under []json.RawMessage
	for _, other := range []string{"kps-1", "kps-2"} {
		_, o := testKey(t, "ES256", other)
		under = append(under, bytes.Replace(o, []byte(`"`+other+`"`), []byte(`"main"`), 1))
	}
	_, ed := testKey(t, "EdDSA", "kps-ed") // under main too, but cannot verify ES256: not counted
	under = append(under, bytes.Replace(ed, []byte(`"kps-ed"`), []byte(`"main"`), 1))

	two := keySet(t, under[0], jwk, under[2])   // the signer's key second of two that fit
	three := keySet(t, under[0], under[1], jwk) // three that fit
	for _, tc := range []struct {
		name string
		lim  Limits
		keys *KeySet
		want Reason
		ops  int
	}{
		{"two keys fit", Limits{}, two, ReasonVerified, 2},
		{"three keys fit", Limits{}, three, ReasonOverLimit, 0},
		{"three keys fit, limit 3", Limits{KeysPerSignature: 3}, three, ReasonVerified, 3},
	} {
		var res []Result
		ops := opsDuring(func() { res, _ = tc.lim.Verify(context.Background(), signed, tc.keys) })
		if len(res) != 1 || res[0].Reason != tc.want || ops != tc.ops {
			t.Errorf("%s: %+v after %d operations; want %s after %d", tc.name, res, ops, tc.want, tc.ops)
		}
	}
}

// TestLimitsForms: a signature over a form past Limits.Forms is over-limit
// when the card has more distinct forms than that; a card whose forms are
// the same bytes has one to try.
func TestLimitsForms(t *testing.T) {
	three := []byte(signaturetest.HostileCard) // three distinct forms
	for _, tc := range []struct {
		name  string
		card  []byte
		form  Form
		forms int
		want  Reason
	}{
		{"spec form, all forms", three, FormSpec, 0, ReasonVerified},
		{"spec form, two forms", three, FormSpec, 2, ReasonOverLimit},
		{"sdk form, two forms", three, FormSDK, 2, ReasonVerified},
		{"served form, one form", three, FormServed, 1, ReasonVerified},
		{"spec form, one distinct form", []byte(baseCard), FormSpec, 1, ReasonVerified},
	} {
		signed, jwk := mustSign(t, tc.card, "EdDSA", "forms", SignOptions{Form: tc.form})
		res, err := Limits{Forms: tc.forms}.Verify(context.Background(), signed, keySet(t, jwk))
		if err != nil || len(res) != 1 || res[0].Reason != tc.want {
			t.Errorf("%s: %+v, %v; want %s", tc.name, res, err, tc.want)
		}
	}
	// Tampered with: invalid over every form tried, and every form was.
	signed, jwk := mustSign(t, three, "EdDSA", "forms", SignOptions{Form: FormSpec})
	tampered := bytes.Replace(signed, []byte(`"Signed to be expensive."`), []byte(`"Signed to be cheap."`), 1)
	if r := verify1(t, tampered, keySet(t, jwk)); r.Reason != ReasonInvalidSignature {
		t.Errorf("tampered: %+v; want invalid-signature", r)
	}
}

// TestLimitsOperations: a rotation's two signatures over the spec form of a
// card with three distinct forms take six operations; with five, the second
// signature is over-limit.
func TestLimitsOperations(t *testing.T) {
	card := []byte(signaturetest.HostileCard)
	once, oldJWK := mustSign(t, card, "ES256", "ops-old", SignOptions{Form: FormSpec})
	twice, newJWK := mustSign(t, once, "ES256", "ops-new", SignOptions{Form: FormSpec})
	keys := keySet(t, oldJWK, newJWK)
	for _, tc := range []struct {
		ops  int
		want [2]Reason
		made int
	}{
		{0, [2]Reason{ReasonVerified, ReasonVerified}, 6},
		{6, [2]Reason{ReasonVerified, ReasonVerified}, 6},
		{5, [2]Reason{ReasonVerified, ReasonOverLimit}, 5},
		{1, [2]Reason{ReasonOverLimit, ReasonOverLimit}, 1},
	} {
		var res []Result
		made := opsDuring(func() { res, _ = Limits{Operations: tc.ops}.Verify(context.Background(), twice, keys) })
		if len(res) != 2 || res[0].Reason != tc.want[0] || res[1].Reason != tc.want[1] || made != tc.made {
			t.Errorf("Operations %d: %+v after %d operations; want %v after %d", tc.ops, res, made, tc.want, tc.made)
		}
	}
}

// steppingClock returns a clock that moves on by step each time it is read.
func steppingClock(step time.Duration) func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

// TestLimitsTime: once the card has taken Limits.Time (key lookups not
// counted), a signature that needs an operation is over-limit. The clock
// moves on a second per reading: start, before and after the lookup (one
// second of waiting, not counted), before the first operation.
func TestLimitsTime(t *testing.T) {
	signed, jwk := mustSign(t, []byte(baseCard), "EdDSA", "time", SignOptions{})
	keys := keySet(t, jwk)
	for _, tc := range []struct {
		limit time.Duration
		want  Reason
	}{
		{1500 * time.Millisecond, ReasonOverLimit}, // 3 s since start, 1 s of it in Lookup
		{2 * time.Second, ReasonVerified},
	} {
		res, err := Limits{Time: tc.limit}.verify(context.Background(), signed, keys, steppingClock(time.Second))
		if err != nil || len(res) != 1 || res[0].Reason != tc.want {
			t.Errorf("Time %v: %+v, %v; want %s", tc.limit, res, err, tc.want)
		}
	}
}

// cancelKeys cancels the verification's context while it looks keys up,
// and answers anyway.
type cancelKeys struct {
	recordKeys
	cancel context.CancelFunc
}

func (c *cancelKeys) Lookup(ctx context.Context, kid, jku string) ([]Key, error) {
	c.cancel()
	return c.recordKeys.Lookup(ctx, kid, jku)
}

// TestVerifyStops: once ctx is done no operation is made and no key looked
// up; the signatures left are unverified (keys-unavailable), not invalid.
func TestVerifyStops(t *testing.T) {
	once, jwk1 := mustSign(t, []byte(baseCard), "ES256", "stop-1", SignOptions{})
	twice, jwk2 := mustSign(t, once, "ES256", "stop-2", SignOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys := &cancelKeys{recordKeys: recordKeys{set: keySet(t, jwk1, jwk2)}, cancel: cancel}
	var res []Result
	if ops := opsDuring(func() { res, _ = Verify(ctx, twice, keys) }); ops != 0 {
		t.Errorf("%d operations after ctx was done", ops)
	}
	if len(keys.calls) != 1 {
		t.Errorf("lookups %v, want the first only", keys.calls)
	}
	for _, r := range res {
		if r.Reason != ReasonKeysUnavailable || !strings.Contains(r.Detail, "stopped") {
			t.Errorf("result %d = %+v; want keys-unavailable (stopped)", r.Index, r)
		}
	}
}

// TestLimitsRealCards: under the default limits every real card verifies
// as it did without them — the fixture cards and both SDK agents' cards,
// signed over each form, once and during a rotation
// (two signatures, the old key's first, over the dearest form). The cards
// the JS SDK signs itself are in TestSDKSignatures, which uses Verify too.
func TestLimitsRealCards(t *testing.T) {
	cards := append(fixtureCards(t), jcstest.ReadFile(t, "testdata/cards/jssdk-v1.0.json"),
		jcstest.ReadFile(t, "testdata/cards/a2ago-v1.0.json"), []byte(signaturetest.HostileCard))
	for i, card := range cards {
		for _, alg := range []string{"ES256", "Ed25519"} { // the count of operations is the same for every alg
			for _, form := range Forms() {
				// A fixture card may be signed already (the §8.4 example):
				// the signature added is the last.
				signed, jwk := mustSign(t, card, alg, "real-"+alg, SignOptions{Form: form})
				res, err := Verify(context.Background(), signed, keySet(t, jwk))
				if err != nil || len(res) == 0 || !res[len(res)-1].Verified {
					t.Errorf("card %d, %s over %s: %+v, %v", i, alg, form, res, err)
				}
			}
		}
		once, oldJWK := mustSign(t, card, "ES256", "real-old", SignOptions{Form: FormSpec})
		twice, newJWK := mustSign(t, once, "ES256", "real-new", SignOptions{Form: FormSpec})
		res, err := Verify(context.Background(), twice, keySet(t, oldJWK, newJWK))
		if n := len(res); err != nil || n < 2 || !res[n-2].Verified || !res[n-1].Verified {
			t.Errorf("card %d, rotation: %+v, %v", i, res, err)
		}
	}
}
