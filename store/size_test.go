package store_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/store"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"100", 100},
		{"100B", 100},
		{"1KiB", 1 << 10},
		{"8GiB", 8 << 30},
		{"8gib", 8 << 30},
		{"8Gi", 8 << 30},
		{"8GB", 8 << 30}, // as nats-server reads max_file_store
		{"8G", 8e9},
		{"1KB", 1 << 10},
		{"2MB", 2 << 20},
		{"64M", 64e6},
		{"1 gib", 1 << 30},
		{"7B", 7},
		{"512MiB", 512 << 20},
		{"1.5GiB", 3 << 29},
		{" 2 MiB ", 2 << 20},
		{".5KiB", 512},
		{"1.0000000000000000000000001KiB", 1 << 10},
		{"0.3333B", 0}, // rounded down to whole bytes
		{"1TiB", 1 << 40},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", 8388607 << 40},
	} {
		got, err := store.ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSizeInvalid(t *testing.T) {
	for _, in := range []string{
		"", " ", "GiB", "-1GiB", "1..2GiB", "1.GiB", ".", "1.2.3B", "8 gigabytes", "8XB", "0x10",
		"9223372036854775808", "8388608TiB", "9223372036854775807.9KiB", "1e9", "+1B",
		"123456789012345678901234567890123B", "1 G iB", "1MiB!", "1PiB", "99999999999999999999",
	} {
		got, err := store.ParseSize(in)
		var se *store.SizeError
		if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalidSize) || se.Input != in {
			t.Errorf("ParseSize(%q) = %d, %v, want a *SizeError for it matching ErrInvalidSize", in, got, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{{0, "0B"}, {100, "100B"}, {1 << 10, "1KiB"}, {1536 << 20, "1536MiB"}, {6 << 30, "6GiB"}, {3 << 40, "3TiB"}} {
		if got := store.FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseSize: ParseSize never panics, rejects with a *SizeError for its
// input only, rejects a blank input, accepts only non-negative sizes, and
// FormatSize of what it accepts reads back the same.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8GiB", "1.5GiB", "512MiB", "100", "8GB", "8G", " 2 MiB ", ".5KiB", "-1", "1e9", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := store.ParseSize(s)
		if err != nil {
			var se *store.SizeError
			if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalidSize) || se.Input != s {
				t.Fatalf("ParseSize(%q) error = %v, want a *SizeError for it", s, err)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			t.Fatalf("ParseSize(%q) = %d, want an error", s, n)
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, want ≥ 0", s, n)
		}
		back, err := store.ParseSize(store.FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, store.FormatSize(n), back, err)
		}
	})
}
