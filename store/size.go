package store

import (
	"errors"
	"fmt"
	"math/big"
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
	in := e.Input
	if len(in) > 40 {
		in = in[:40] + "…"
	}
	return fmt.Sprintf("store: invalid size %q: %s", in, e.Reason)
}

func (e *SizeError) Unwrap() error { return ErrInvalidSize }

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
	// Exactly, rounded down: the number is at most maxSizeLen digits.
	r, _ := new(big.Rat).SetString(num)
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return 0, &SizeError{Input: s, Reason: "too large"}
	}
	return n.Int64(), nil
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
