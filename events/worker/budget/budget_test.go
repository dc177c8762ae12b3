package budget_test

import (
	"errors"
	"flag"
	"testing"

	"github.com/carddrift/carddrift/events/worker/budget"
	"github.com/carddrift/carddrift/store"
)

// TestStringRoundTrips: what String writes, Set reads back.
func TestStringRoundTrips(t *testing.T) {
	for _, b := range []budget.Bytes{0, 1, 1000, 1 << 10, 1536 << 10, 256 << 20, 3 << 30, 5 << 40, 1<<63 - 1} {
		var got budget.Bytes
		if err := got.Set(b.String()); err != nil || got != b {
			t.Errorf("Set(%d.String() = %q) = %d, %v, want %d", int64(b), b.String(), got, err, int64(b))
		}
	}
	if got := budget.Default.String(); got != "256MiB" {
		t.Errorf("Default.String() = %q, want 256MiB", got)
	}
}

func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	b := budget.Default
	fs.Var(&b, "memory-budget", "")
	if err := fs.Parse([]string{"--memory-budget", "1GiB"}); err != nil || b != 1<<30 {
		t.Fatalf("--memory-budget 1GiB = %v, %v, want 1GiB", b, err)
	}
	// A unit means what it means to every size flag (store.ParseSize):
	// 256MB is 256 MiB, as nats-server reads it; 256M is 256·10⁶ bytes.
	for _, in := range []string{"256MB", "256M", "256Mi", "1.5GiB", " 64 mib "} {
		want, err := store.ParseSize(in)
		if err != nil {
			t.Fatalf("store.ParseSize(%q): %v", in, err)
		}
		if err := fs.Parse([]string{"--memory-budget", in}); err != nil || int64(b) != want {
			t.Errorf("--memory-budget %q = %d, %v, want %d as store.ParseSize reads it", in, int64(b), err, want)
		}
	}
	fs.SetOutput(discard{})
	if err := fs.Parse([]string{"--memory-budget", "lots"}); err == nil {
		t.Fatal("--memory-budget lots: no error")
	}
	var se *store.SizeError
	if err := b.Set("lots"); !errors.As(err, &se) || se.Input != "lots" {
		t.Fatalf("Set(%q) error = %v, want a *store.SizeError for it", "lots", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestSplit(t *testing.T) {
	if got := budget.PinsPercent + budget.CardsPercent + budget.LiveCardsPercent + budget.PullPercent + budget.SignaturesPercent; got != 100 {
		t.Fatalf("shares add up to %d%%, want 100%%", got)
	}
	for _, total := range []budget.Bytes{budget.Minimum, budget.Default, 1<<30 + 7, 1<<63 - 1} {
		s := budget.Split(total)
		if s.Total() != total {
			t.Errorf("Split(%v).Total() = %v, want %v", total, s.Total(), total)
		}
		for name, v := range map[string]budget.Bytes{"Pins": s.Pins, "Cards": s.Cards, "LiveCards": s.LiveCards, "Pull": s.Pull, "Signatures": s.Signatures} {
			if v <= 0 {
				t.Errorf("Split(%v).%s = %v, want positive", total, name, v)
			}
		}
	}
	s := budget.Split(budget.Default)
	if want := budget.Bytes(64 << 20); s.Pins != want {
		t.Errorf("Split(Default).Pins = %d, want %d", s.Pins, want)
	}
	if got, want := s.DiffMemoOption(), int64(s.Cards)/16; got != want {
		t.Errorf("DiffMemoOption() = %d, want %d", got, want)
	}
	if got := s.CardsOption() + s.DiffMemoOption(); got != int64(s.Cards) {
		t.Errorf("CardsOption + DiffMemoOption = %d, want the Cards share %d", got, int64(s.Cards))
	}
	if got, want := s.LeaseCopyOption(), int64(s.LiveCards)/8; got != want {
		t.Errorf("LeaseCopyOption() = %d, want %d", got, want)
	}
	if got, want := s.LiveCardsOption(), (int64(s.LiveCards)-s.LeaseCopyOption())/2; got != want {
		t.Errorf("LiveCardsOption() = %d, want %d", got, want)
	}
	// The cache's bytes count double (parsed cards): with the copy, within the share.
	if got := 2*s.LiveCardsOption() + s.LeaseCopyOption(); got > int64(s.LiveCards) {
		t.Errorf("2·LiveCardsOption + LeaseCopyOption = %d, over the LiveCards share %d", got, int64(s.LiveCards))
	}
}

func TestValidate(t *testing.T) {
	if err := budget.Default.Validate(); err != nil {
		t.Errorf("Default.Validate() = %v", err)
	}
	if err := (budget.Minimum - 1).Validate(); !errors.Is(err, budget.ErrTooSmall) {
		t.Errorf("(Minimum-1).Validate() = %v, want ErrTooSmall", err)
	}
	if got := budget.Default.GoMemoryLimit(); got != 384<<20 {
		t.Errorf("Default.GoMemoryLimit() = %d, want 384 MiB", got)
	}
}
