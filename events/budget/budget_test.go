package budget_test

import (
	"errors"
	"flag"
	"testing"

	"github.com/carddrift/carddrift/events/budget"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want budget.Bytes
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"256MiB", 256 << 20},
		{"256 MiB", 256 << 20},
		{" 1GiB ", 1 << 30},
		{"1gib", 1 << 30},
		{"512Mi", 512 << 20},
		{"64M", 64 << 20},
		{"1KB", 1000},
		{"2MB", 2_000_000},
		{"3GB", 3_000_000_000},
		{"1TiB", 1 << 40},
		{"7B", 7},
		{"8388607TiB", 8388607 << 40},
		{"9223372036854775807", 1<<63 - 1},
	} {
		got, err := budget.Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v, want %d, nil", tc.in, got, err, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", budget.ErrSyntax},
		{"MiB", budget.ErrSyntax},
		{"-1MiB", budget.ErrSyntax},
		{"+1", budget.ErrSyntax},
		{"1.5GiB", budget.ErrSyntax},
		{"1 G iB", budget.ErrSyntax},
		{"1MiB!", budget.ErrSyntax},
		{"12XB", budget.ErrUnit},
		{"1PiB", budget.ErrUnit},
		{"8388608TiB", budget.ErrRange},
		{"9223372036854775808", budget.ErrRange},
		{"99999999999999999999", budget.ErrRange},
	} {
		_, err := budget.Parse(tc.in)
		var pe *budget.ParseError
		if !errors.As(err, &pe) || pe.Input != tc.in || !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) error = %v, want a *ParseError for %q that is %v", tc.in, err, tc.in, tc.want)
		}
	}
}

func TestStringRoundTrips(t *testing.T) {
	for _, b := range []budget.Bytes{0, 1, 1000, 1 << 10, 1536 << 10, 256 << 20, 3 << 30, 5 << 40, 1<<63 - 1} {
		got, err := budget.Parse(b.String())
		if err != nil || got != b {
			t.Errorf("Parse(%d.String() = %q) = %d, %v, want %d", int64(b), b.String(), got, err, int64(b))
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
	fs.SetOutput(discard{})
	if err := fs.Parse([]string{"--memory-budget", "lots"}); err == nil {
		t.Fatal("--memory-budget lots: no error")
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
	if got, want := s.LiveCardsOption(), int64(s.LiveCards)/2; got != want {
		t.Errorf("LiveCardsOption() = %d, want %d", got, want)
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
