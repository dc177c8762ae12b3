package store

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// ErrInvalidSize is what every *SizeError matches with errors.Is.
var ErrInvalidSize = errors.New("store: invalid size")

// SizeError reports a size string ParseSize cannot read: what was given and
// why. It matches ErrInvalidSize.
type SizeError struct {
	Input  string
	Reason string
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("store: invalid size %q: %s", truncateInput(e.Input), e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidSize) hold.
func (e *SizeError) Unwrap() error { return ErrInvalidSize }

func truncateInput(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// sizeUnits are the suffixes ParseSize reads (case-insensitive). "GB" and
// its kin mean what nats-server's configuration means by them (max_file_store:
// 8GB is 8 GiB); the bare SI letters K, M, G, T are powers of 1000, as in
// Kubernetes quantities.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "kb": 1 << 10,
	"mi": 1 << 20, "mib": 1 << 20, "mb": 1 << 20,
	"gi": 1 << 30, "gib": 1 << 30, "gb": 1 << 30,
	"ti": 1 << 40, "tib": 1 << 40, "tb": 1 << 40,
}

// maxSizeLen bounds the input ParseSize reads.
const maxSizeLen = 32

// ParseSize reads a byte size for flags and environment variables: a
// non-negative decimal number (a fraction is allowed: "1.5GiB"), optional
// spaces, and an optional unit: B; KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti, or
// KB, MB, GB, TB as nats-server reads them: powers of 1024); K, M, G, T
// (powers of 1000). Units are case-insensitive. The result is rounded down
// to whole bytes and must fit an int64. Anything else is a *SizeError.
func ParseSize(s string) (int64, error) {
	if len(s) > maxSizeLen {
		return 0, &SizeError{Input: s, Reason: fmt.Sprintf("longer than %d bytes", maxSizeLen)}
	}
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, &SizeError{Input: s, Reason: "want a number and a unit, e.g. 8GiB"}
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, &SizeError{Input: s, Reason: "unknown unit " + strconv.Quote(t[i:]) + " (want B, KiB, MiB, GiB, TiB, K, M, G or T)"}
	}
	whole, frac, hasFrac := strings.Cut(num, ".")
	if strings.Contains(frac, ".") || whole == "" && frac == "" || hasFrac && frac == "" {
		return 0, &SizeError{Input: s, Reason: "malformed number"}
	}
	var n int64
	for _, c := range whole {
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, &SizeError{Input: s, Reason: "too large"}
		}
		n = n*10 + d
	}
	if n > math.MaxInt64/mult {
		return 0, &SizeError{Input: s, Reason: "too large"}
	}
	n *= mult
	// The fraction, exactly: frac digits d1 d2 … contribute
	// mult·0.d1d2… bytes, rounded down. Digits beyond 19 cannot add a byte
	// for any unit here (mult ≤ 2^40 < 10^13).
	if len(frac) > 19 {
		frac = frac[:19]
	}
	if frac != "" {
		f, _ := strconv.ParseUint(frac, 10, 64) // ≤ 19 digits: fits
		scale := uint64(1)
		for range len(frac) {
			scale *= 10
		}
		// mult·f/scale without overflow: split mult = q·scale + r.
		m := uint64(mult)
		add := (m/scale)*f + mulDiv(m%scale, f, scale)
		if add > uint64(math.MaxInt64-n) {
			return 0, &SizeError{Input: s, Reason: "too large"}
		}
		n += int64(add)
	}
	return n, nil
}

// mulDiv returns a·b/c rounded down for a, b < c ≤ 10^19, without overflow.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c) // hi < c since a·b < c²
	return q
}

// FormatSize writes n bytes the way ParseSize reads them back exactly: the
// largest IEC unit that divides n ("8GiB", "1536MiB", "100B").
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
