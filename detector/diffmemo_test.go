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
	memoized := map[[2]string]bool{} // fixtures may share a digest
	for _, p := range cards {
		for _, l := range cards {
			want := Diff(p.card, l.card)
			for _, call := range []string{"miss", "hit"} {
				if got := m.Diff(p.digest, l.digest, p.card, l.card); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s → %s (%s): memo =\n%s\nwant Diff's\n%s", p.name, l.name, call, dump(got), dump(want))
				}
			}
			if !signed(p.card) && !signed(l.card) {
				memoized[[2]string{p.digest, l.digest}] = true
			}
		}
	}
	if got := m.Len(); got != len(memoized) {
		t.Errorf("memo holds %d pairs, want the %d unsigned ones (signed cards are diffed every time)", got, len(memoized))
	}
}

// Signatures come from verification, not from the digest: a card carrying
// them is diffed every time, so two verifications of one body never share
// a diff.
func TestDiffMemoSignedIsNotKept(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 20)
	p, l := *cards[0].card, *cards[1].card
	p.Signatures = []Signature{{KeyID: "k1", Verified: true, Reason: "verified"}}
	want := Diff(&p, &l)
	if got := m.Diff(cards[0].digest, cards[1].digest, &p, &l); !reflect.DeepEqual(got, want) || m.Len() != 0 {
		t.Fatalf("signed pinned card: memo = %s (len %d), want Diff's %s, nothing kept", dump(got), m.Len(), dump(want))
	}
	l.HasSignatures = true
	if m.Diff(cards[1].digest, cards[0].digest, &l, cards[0].card); m.Len() != 0 {
		t.Fatal("a signed live card was kept")
	}
}

// What the memo hands out is shared: appending to it never writes into it.
func TestDiffMemoSharedFindings(t *testing.T) {
	cards := memoCards(t)
	m := NewDiffMemo(1 << 20)
	var p, l memoCard
	for _, a := range cards {
		for _, b := range cards {
			if !signed(a.card) && !signed(b.card) && len(Diff(a.card, b.card)) > 1 {
				p, l = a, b
			}
		}
	}
	if p.card == nil {
		t.Fatal("no unsigned pair with findings among the fixtures")
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
			if !signed(a.card) && !signed(b.card) && a.digest != b.digest {
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
