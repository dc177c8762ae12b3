package budget_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/events/budget"
)

// FuzzParse: Parse never panics, fails only with a *ParseError naming one
// of its reasons, never returns a negative size, and what it accepts
// formats to a string it parses back to the same size.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"256MiB", "1Gi", "512 MB", "0", "9223372036854775807", "8388608TiB", "-1", "1.5G", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := budget.Parse(s)
		if err != nil {
			var pe *budget.ParseError
			if !errors.As(err, &pe) || pe.Input != s {
				t.Fatalf("Parse(%q) error = %#v, want a *ParseError", s, err)
			}
			if !errors.Is(err, budget.ErrSyntax) && !errors.Is(err, budget.ErrUnit) && !errors.Is(err, budget.ErrRange) {
				t.Fatalf("Parse(%q) error = %v, want ErrSyntax, ErrUnit or ErrRange", s, err)
			}
			return
		}
		if b < 0 {
			t.Fatalf("Parse(%q) = %d < 0", s, b)
		}
		if strings.TrimSpace(s) == "" {
			t.Fatalf("Parse(%q) = %d, want an error", s, b)
		}
		back, err := budget.Parse(b.String())
		if err != nil || back != b {
			t.Fatalf("Parse(%q) = %d; Parse(%q) = %d, %v", s, b, b.String(), back, err)
		}
	})
}
