package detector

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// memoCard is a fixture card with its digest.
type memoCard struct {
	name, digest string
	card         *Card
}

func memoCards(t testing.TB) []memoCard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureCards, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixture cards: %v", err)
	}
	var out []memoCard
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(raw)
		if err != nil {
			continue // the fixtures that do not parse
		}
		d, err := Digest(raw)
		if err != nil {
			t.Fatalf("Digest(%s): %v", f, err)
		}
		out = append(out, memoCard{name: filepath.Base(f), digest: d, card: c})
	}
	return out
}

// The memo is Diff: for every pair of fixture cards, the first call (a
// miss) and the second (a hit) equal Diff, the oracle.
func TestDiffMemoEqualsDiff(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 30)
	memoized := map[diffKey]bool{} // fixtures may share a digest
	for _, p := range cards {
		for _, l := range cards {
			want := Diff(p.card, l.card)
			for _, call := range []string{"miss", "hit"} {
				if got := m.Diff(p.digest, l.digest, p.card, l.card); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s → %s (%s): memo =\n%s\nwant Diff's\n%s", p.name, l.name, call, dump(got), dump(want))
				}
			}
			memoized[diffKey{p.digest, l.digest, signatureState(p.card), signatureState(l.card)}] = true
		}
	}
	if got := m.Len(); got != len(memoized) {
		t.Errorf("memo holds %d pairs, want %d (one per pair of digests and signature states)", got, len(memoized))
	}
}

// Signatures come from verification, not from the digest: one body with
// other verification outcomes, or served with and without signatures, is
// another pair — each diffed once and each Diff's — and the same outcomes
// again are a hit.
func TestDiffMemoSignatureState(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 20)
	base, live := *cards[0].card, *cards[1].card
	variants := []func(c *Card){
		func(c *Card) {},
		func(c *Card) { c.HasSignatures = true },
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t1", Source: SourceTrusted, Verified: true, Reason: SignatureVerified}}
		},
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t2", Source: SourceTrusted, Verified: true, Reason: SignatureVerified}}
		},
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t1", Source: SourceJKU, Verified: true, Reason: SignatureVerified}}
		},
		func(c *Card) {
			c.HasSignatures = true
			c.Signatures = []Signature{{KeyID: "k1", Alg: "ES256", Thumbprint: "t1", Source: SourceTrusted, Reason: SignatureInvalid}}
		},
		func(c *Card) {
			c.Conformance = append(slices.Clip(c.Conformance), Nonconformance{Path: "/signatures", Message: "not an array"})
		},
	}
	for round := range 2 {
		for i, pv := range variants {
			for j, lv := range variants {
				p, l := base, live
				pv(&p)
				lv(&l)
				want := Diff(&p, &l)
				if got := m.Diff(cards[0].digest, cards[1].digest, &p, &l); !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d, pinned variant %d, live variant %d: memo =\n%s\nwant Diff's\n%s", round, i, j, dump(got), dump(want))
				}
			}
		}
		if got, want := m.Len(), len(variants)*len(variants); got != want {
			t.Fatalf("round %d: memo holds %d pairs, want %d (one per pair of signature states)", round, got, want)
		}
	}
}

// signatureState encodes every field of a Signature: a field added to it
// must be added there too, or two outcomes that differ in it would share a
// diff.
func TestSignatureStateCoversSignature(t *testing.T) {
	if n := reflect.TypeFor[Signature]().NumField(); n != 7 {
		t.Fatalf("Signature has %d fields, signatureState encodes 7: add the new one to it", n)
	}
	a := &Card{HasSignatures: true, Signatures: []Signature{{KeyID: "ab", Alg: "c"}}}
	b := &Card{HasSignatures: true, Signatures: []Signature{{KeyID: "a", Alg: "bc"}}}
	if signatureState(a) == signatureState(b) {
		t.Error("two signatures that differ only in where a field ends share a state")
	}
	if s := signatureState(&Card{}); s != "" {
		t.Errorf("unsigned card's state = %q, want empty", s)
	}
}

// What the memo hands out is shared: appending to it never writes into it.
func TestDiffMemoSharedFindings(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 20)
	var p, l memoCard
	for _, a := range cards {
		for _, b := range cards {
			if len(Diff(a.card, b.card)) > 1 {
				p, l = a, b
			}
		}
	}
	if p.card == nil {
		t.Fatal("no pair with findings among the fixtures")
	}
	first := m.Diff(p.digest, l.digest, p.card, l.card)
	if cap(first) != len(first) {
		t.Fatalf("cap %d != len %d: an append would write into the memo", cap(first), len(first))
	}
	want := slices.Clone(first)
	grown := append(first, Finding{Rule: "task-level"})
	grown[0].Message = "changed by a caller"
	if got := m.Diff(p.digest, l.digest, p.card, l.card); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a caller appended: memo =\n%s\nwant\n%s", dump(got), dump(want))
	}
}

// The memo is bounded in bytes: the least recently used pair goes first,
// and a pair recomputed after eviction is still Diff's.
func TestDiffMemoBound(t *testing.T) {
	cards := memoCards(t)
	var pairs [][2]memoCard
	for _, a := range cards {
		for _, b := range cards {
			if a.digest != b.digest {
				pairs = append(pairs, [2]memoCard{a, b})
			}
		}
	}
	big := NewDiffMemo(1 << 30)
	for _, pr := range pairs {
		big.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card)
	}
	bound := big.Bytes() / 4
	m := NewDiffMemo(bound)
	for _, pr := range pairs {
		m.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card)
		if m.Bytes() > bound {
			t.Fatalf("memo counts %d bytes, over its bound %d", m.Bytes(), bound)
		}
	}
	if m.Len() == 0 || m.Len() >= len(pairs) {
		t.Errorf("memo holds %d of %d pairs, want some but not all", m.Len(), len(pairs))
	}
	pr := pairs[0] // the oldest: evicted
	if got, want := m.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card), Diff(pr[0].card, pr[1].card); !reflect.DeepEqual(got, want) {
		t.Fatalf("recomputed after eviction: %s, want %s", dump(got), dump(want))
	}
	if NewDiffMemo(0) != nil || NewDiffMemo(-1) != nil {
		t.Error("a memo with no bytes is not nil")
	}
	var none *DiffMemo
	if got, want := none.Diff(pr[0].digest, pr[1].digest, pr[0].card, pr[1].card), Diff(pr[0].card, pr[1].card); !reflect.DeepEqual(got, want) {
		t.Error("the nil memo is not Diff")
	}
}

// FuzzDiffMemo compares the memo with Diff, its oracle, on parsed inputs:
// a miss, a hit, and the swapped pair. The seed corpus in
// testdata/fuzz/FuzzDiffMemo pairs fixture cards. Run:
// go test ./detector -run '^$' -fuzz FuzzDiffMemo
func FuzzDiffMemo(f *testing.F) {
	m := NewDiffMemo(8 << 20)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, err := Parse(a)
		if err != nil {
			return
		}
		pb, err := Parse(b)
		if err != nil {
			return
		}
		da, err := Digest(a)
		if err != nil {
			return
		}
		db, err := Digest(b)
		if err != nil {
			return
		}
		for _, pr := range [][2]*Card{{pa, pb}, {pb, pa}} {
			dp, dl := da, db
			if pr[0] == pb {
				dp, dl = db, da
			}
			want := Diff(pr[0], pr[1])
			for range 2 {
				if got := m.Diff(dp, dl, pr[0], pr[1]); !reflect.DeepEqual(got, want) {
					t.Fatalf("memo =\n%s\nwant Diff's\n%s", dump(got), dump(want))
				}
			}
		}
	})
}

// BenchmarkDiffMemo reports a memo hit (goal: under 1 µs) against the Diff
// it saves, timed alternately on every iteration so that machine noise hits
// both alike: ns/hit, ns/diff and diff/hit.
func BenchmarkDiffMemo(b *testing.B) {
	cards := memoCards(b)
	var p, l memoCard
	for _, c := range cards {
		switch {
		case strings.HasPrefix(c.name, "001-"):
			p = c
		case strings.HasPrefix(c.name, "002-"):
			l = c
		}
	}
	m := NewDiffMemo(1 << 20)
	m.Diff(p.digest, l.digest, p.card, l.card)
	var hit, diff time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		for range 100 {
			m.Diff(p.digest, l.digest, p.card, l.card)
		}
		t1 := time.Now()
		Diff(p.card, l.card)
		hit += t1.Sub(t0)
		diff += time.Since(t1)
		n++
	}
	hitNS := float64(hit.Nanoseconds()) / float64(100*n)
	diffNS := float64(diff.Nanoseconds()) / float64(n)
	b.ReportMetric(hitNS, "ns/hit")
	b.ReportMetric(diffNS, "ns/diff")
	b.ReportMetric(diffNS/hitNS, "diff/hit")
}
