package budget

import (
	"errors"
	"fmt"

	"github.com/carddrift/carddrift/store"
)

// Bytes is a size in bytes. It implements flag.Value: Set reads as
// store.ParseSize, String formats as store.FormatSize.
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
	// Cards bounds what the worker keeps of the pinned cards: a
	// sixteenth for its memo of the diffs between pinned and live cards
	// (worker.Options.DiffMemoBytes, DiffMemoOption), the rest for its
	// parsed pinned cards (worker.Options.CardCacheBytes, CardsOption).
	Cards Bytes
	// LiveCards bounds what the fetcher keeps of the live agents: an
	// eighth for its local copy of the shared leases
	// (fetcher.Options.LeaseCopyBytes, LeaseCopyOption), the rest for its
	// cache of parsed live cards (fetcher.Options.CacheBytes). The fetcher
	// counts a card's body bytes, and a parsed card retains about twice its
	// body, so the cache is given half of the rest (LiveCardsOption).
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
// LiveCards share left beside the lease copy, since the fetcher counts body
// bytes only (see LiveCards).
func (s Shares) LiveCardsOption() int64 { return (int64(s.LiveCards) - s.LeaseCopyOption()) / 2 }

// CardsOption is the value for worker.Options.CardCacheBytes: the Cards
// share less the diff memo's.
func (s Shares) CardsOption() int64 { return int64(s.Cards) - s.DiffMemoOption() }

// DiffMemoOption is the value for worker.Options.DiffMemoBytes: a sixteenth
// of the Cards share.
func (s Shares) DiffMemoOption() int64 { return int64(s.Cards) / 16 }

// LeaseCopyOption is the value for fetcher.Options.LeaseCopyBytes: an
// eighth of the LiveCards share.
func (s Shares) LeaseCopyOption() int64 { return int64(s.LiveCards) / 8 }

// ErrTooSmall is the reason Validate gives for a budget below Minimum.
var ErrTooSmall = errors.New("below the minimum budget")

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

// String formats b as store.FormatSize does: in the largest binary unit
// that divides it ("256MiB", "1536KiB", "1000B").
func (b Bytes) String() string { return store.FormatSize(int64(b)) }

// Set implements flag.Value: it reads s as store.ParseSize does (so
// --memory-budget 256MB means what --storage-limit 256MB means: 256 MiB, as
// nats-server reads its configuration; 256M is 256·10⁶ bytes). An error is
// a *store.SizeError.
func (b *Bytes) Set(s string) error {
	n, err := store.ParseSize(s)
	if err != nil {
		return err
	}
	*b = Bytes(n)
	return nil
}
