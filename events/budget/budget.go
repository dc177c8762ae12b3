package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Bytes is a size in bytes. It implements flag.Value: Set parses as Parse,
// String formats in the largest binary unit that divides it.
type Bytes int64

// Default is the memory budget of carddrift serve: half the Helm chart's
// 512Mi container limit, leaving the other half to what the budget does not
// cover (the program, connections, the fetches and handlers running) and to
// the garbage collector's headroom (serve sets Go's soft memory limit to
// GoMemoryLimit).
const Default Bytes = 256 << 20

// Minimum is the smallest budget Validate accepts: below it a share cannot
// hold one card of the default 1 MiB body limit with its parsed copy, and
// caching stops being useful. (The pull buffers hold at least one message of
// the server's maximum payload per partition whatever their share: with a
// small budget and many partitions they take more than it.)
const Minimum Bytes = 16 << 20

// Shares is a budget split across the caches it bounds. Every field is a
// number of bytes.
type Shares struct {
	// Pins bounds the pin cache (store.WithCacheBytes).
	Pins Bytes
	// Cards bounds the worker's parsed pinned cards
	// (worker.Options.CardCacheBytes).
	Cards Bytes
	// LiveCards bounds the fetcher's cache of parsed live cards
	// (fetcher.Options.CacheBytes). The fetcher counts a card's body
	// bytes, and a parsed card retains about twice its body, so the fetcher
	// is given half of this share (LiveCardsOption).
	LiveCards Bytes
	// Pull bounds the lifecycle events a worker holds: half for its
	// consumers' pull buffers, summed over its partitions
	// (worker.Options.PullBufferBytes; each partition gets at least one
	// message of the server's maximum payload, so a single message larger
	// than its part is still delivered), half for the events handed on and
	// not yet finished (worker.Options.InflightBytes).
	Pull Bytes
	// Signatures bounds what verifying signatures keeps: carddrift serve
	// gives two thirds to the verified outcomes
	// (fetcher.SignatureOptions.CacheBytes) and a third to the key sets
	// fetched from signatures' jku (fetcher.JWKSOptions.MaxBytes).
	Signatures Bytes
}

// The shares of Split, in percent of the total; they add up to 100.
const (
	PinsPercent       = 25
	CardsPercent      = 20
	LiveCardsPercent  = 10
	PullPercent       = 20
	SignaturesPercent = 25
)

// Split divides total into Shares (PinsPercent, CardsPercent,
// LiveCardsPercent, PullPercent, SignaturesPercent). The shares add up to
// total: rounding goes to Signatures.
func Split(total Bytes) Shares {
	// total·pct/100 without overflowing: exact whenever total·pct is a
	// multiple of 100.
	part := func(pct int64) Bytes { return Bytes(int64(total)/100*pct + int64(total)%100*pct/100) }
	s := Shares{Pins: part(PinsPercent), Cards: part(CardsPercent), LiveCards: part(LiveCardsPercent), Pull: part(PullPercent)}
	s.Signatures = total - s.Pins - s.Cards - s.LiveCards - s.Pull
	return s
}

// Total is the sum of the shares.
func (s Shares) Total() Bytes { return s.Pins + s.Cards + s.LiveCards + s.Pull + s.Signatures }

// LiveCardsOption is the value for fetcher.Options.CacheBytes: half the
// LiveCards share, since the fetcher counts body bytes only (see LiveCards).
func (s Shares) LiveCardsOption() int64 { return int64(s.LiveCards) / 2 }

// ErrSyntax, ErrUnit and ErrRange are the reasons a ParseError gives.
var (
	// ErrSyntax: not a whole number of units (empty, a sign, a fraction,
	// stray characters).
	ErrSyntax = errors.New("want a whole number of bytes with an optional unit (B, KiB, MiB, GiB, TiB, Ki, Mi, Gi, Ti, KB, MB, GB, TB)")
	// ErrUnit: a unit Parse does not know.
	ErrUnit = errors.New("unknown unit")
	// ErrRange: more bytes than an int64 holds.
	ErrRange = errors.New("out of range")
	// ErrTooSmall: a budget below Minimum (Validate).
	ErrTooSmall = errors.New("below the minimum budget")
)

// ParseError is returned by Parse: the input and why it is not a size
// (ErrSyntax, ErrUnit or ErrRange; test with errors.Is).
type ParseError struct {
	Input string
	Err   error
}

func (e *ParseError) Error() string { return fmt.Sprintf("size %q: %v", e.Input, e.Err) }

// Unwrap returns the reason.
func (e *ParseError) Unwrap() error { return e.Err }

var units = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// Parse reads a size: decimal digits, optionally followed (after optional
// spaces) by a unit, case-insensitive: B; binary KiB, MiB, GiB, TiB (also
// written Ki, Mi, Gi, Ti as Kubernetes does, or K, M, G, T); decimal KB, MB,
// GB, TB. Any error is a *ParseError.
func Parse(s string) (Bytes, error) {
	in := s
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 19 {
		if i > 19 {
			return 0, &ParseError{Input: in, Err: ErrRange}
		}
		return 0, &ParseError{Input: in, Err: ErrSyntax}
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, &ParseError{Input: in, Err: ErrRange}
	}
	u := strings.ToLower(strings.TrimLeft(s[i:], " "))
	for _, c := range []byte(u) {
		if c < 'a' || c > 'z' {
			return 0, &ParseError{Input: in, Err: ErrSyntax}
		}
	}
	mul, ok := units[u]
	if !ok {
		return 0, &ParseError{Input: in, Err: ErrUnit}
	}
	if n > (1<<63-1)/mul {
		return 0, &ParseError{Input: in, Err: ErrRange}
	}
	return Bytes(n * mul), nil
}

// GoMemoryLimit is the soft memory limit carddrift serve gives the Go
// runtime (runtime/debug.SetMemoryLimit) for a budget b, unless GOMEMLIMIT
// is set: b plus half of b, so that the collector runs before the heap
// doubles a full budget (384 MiB for the default, under the chart's 512Mi).
func (b Bytes) GoMemoryLimit() int64 { return int64(b) + int64(b)/2 }

// Validate reports a budget below Minimum (ErrTooSmall, wrapped).
func (b Bytes) Validate() error {
	if b < Minimum {
		return fmt.Errorf("memory budget %v: %w of %v", b, ErrTooSmall, Minimum)
	}
	return nil
}

// String formats b in the largest binary unit that divides it ("256MiB",
// "1536KiB", "1000B").
func (b Bytes) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// Set implements flag.Value.
func (b *Bytes) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}
