package store

import (
	"context"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// Record is what Pins holds: a JSON-encodable value that names the id it is
// stored under (Key: a task id) and copies itself (Clone: a copy sharing no
// slices or maps, which caches hand out). The task core's pin
// (events/task.Pin) is the record carddrift stores.
type Record[T any] interface {
	Key() string
	Clone() T
}

// Pins stores one pin (a Record) per task id. Task ids may contain any
// characters (see EncodeKey). Safe for concurrent use.
//
// Revisions are positive and increase with every write to the store (not
// only to the key), so a larger revision of the same key is always newer.
type Pins[T Record[T]] interface {
	// Create stores a new pin under pin.Key(); ErrExists if the task already
	// has one. A deleted or expired pin can be created again.
	Create(ctx context.Context, pin T) (rev uint64, err error)
	// Get returns the task's pin and its revision; ErrNotFound if none.
	Get(ctx context.Context, taskID string) (T, uint64, error)
	// Update replaces the pin if rev is its current revision and returns the
	// new revision; ErrConflict if someone wrote it since, ErrNotFound if the
	// pin was deleted or never existed.
	Update(ctx context.Context, pin T, rev uint64) (uint64, error)
	// Delete removes the task's pin; deleting a missing pin is not an error.
	Delete(ctx context.Context, taskID string) error
}

// Cards stores card bodies, content-addressed by canonical digest
// ("sha256:<64 lowercase hex>"). Bodies are stored exactly as served: two
// servings with the same canonical digest but different bytes keep the first.
// Safe for concurrent use.
type Cards interface {
	// Put stores raw under digest (not checking that raw hashes to it);
	// putting the same digest again is a no-op. ErrInvalidDigest if digest
	// is malformed.
	Put(ctx context.Context, digest string, raw []byte) error
	// Get returns the body stored under digest; ErrNotFound if none,
	// ErrInvalidDigest if digest is malformed.
	Get(ctx context.Context, digest string) ([]byte, error)
}

// Lease is the last observation of one agent card URL, shared by every worker
// so that a lease costs at most one fetch per worker, however many tasks
// transition. Leases written before v1.3 may carry a claim (holder,
// heldUntil, confirming): it is ignored.
type Lease struct {
	CardURL string `json:"cardUrl"`
	// Digest of the card last seen ("" if never fetched successfully).
	Digest string `json:"digest,omitempty"`
	ETag   string `json:"etag,omitempty"`
	// MaxAge is the clamped Cache-Control max-age the lease runs for.
	MaxAge time.Duration `json:"maxAge"`
	// FetchedAt is when the last fetch or revalidation (200 or 304) completed.
	FetchedAt time.Time `json:"fetchedAt"`
	// LastFullFetch is when the last unconditional (200) fetch completed.
	LastFullFetch time.Time `json:"lastFullFetch"`

	// The last failed fetch, shared like a success: until RetryAt every
	// worker reports it instead of fetching again. FailCount counts failures
	// in a row (the backoff grows with it); a successful fetch clears them.
	FailedAt   time.Time `json:"failedAt,omitzero"`
	FailReason string    `json:"failReason,omitempty"`
	FailStatus int       `json:"failStatus,omitempty"`
	FailDetail string    `json:"failDetail,omitempty"`
	FailCount  int       `json:"failCount,omitempty"`
	RetryAt    time.Time `json:"retryAt,omitzero"`
	// FailingSince is when the current run of failures began (the first
	// of FailCount failures in a row): the agent is unreachable since.
	FailingSince time.Time `json:"failingSince,omitzero"`

	// ChangedAt is when a fetch first saw Digest after another digest (or
	// none): the live card's last change.
	ChangedAt time.Time `json:"changedAt,omitzero"`
	// Replicas is the window of the live digests recent fetches saw, which
	// split brain is decided on (see detector.Replicas).
	Replicas detector.Replicas `json:"replicas,omitzero"`

	// Reported is what the last card.observed of the card URL said, and
	// the fetches since (DESIGN, Wire economy).
	Reported Reported `json:"reported,omitzero"`
}

// Reported is the last card.observed of a card URL (what carddrift told of
// the live card) and the fetches no card.observed has reported since.
type Reported struct {
	Digest string `json:"digest,omitempty"`
	// Signer identifies who signed the card as far as its body tells: a
	// hash of the body of a signed card, "" for an unsigned one.
	Signer string `json:"signer,omitempty"`
	// Class is the class of the last result: fetched, not-modified, or
	// unreachable (a failure recorded since; card.unreachable reported it).
	Class string `json:"class,omitempty"`
	// At is when that card.observed was published: the next heartbeat is
	// due one heartbeat later.
	At time.Time `json:"at,omitzero"`
	// Fetches counts the fetches and revalidations since At that no
	// card.observed reported yet, the first of them at Since.
	Fetches int       `json:"fetches,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// Fresh and Failing report whether, at now, the lease's observation is
// still valid and a recorded failure is still being backed off.
func (l Lease) Fresh(now time.Time) bool {
	return l.Digest != "" && now.Before(l.FetchedAt.Add(l.MaxAge))
}

func (l Lease) Failing(now time.Time) bool {
	return l.FailReason != "" && now.Before(l.RetryAt)
}

// Leases stores one Lease per card URL with compare-and-set updates (of all
// workers that write on the same revision exactly one Update succeeds: a
// fetch records its result, or reads the winner's). Safe for concurrent
// use. Revisions behave as for Pins.
type Leases interface {
	// Get, Create (under l.CardURL) and Update behave as Pins' do.
	Get(ctx context.Context, cardURL string) (Lease, uint64, error)
	Create(ctx context.Context, l Lease) (uint64, error)
	Update(ctx context.Context, l Lease, rev uint64) (uint64, error)
}

// Scanner is implemented by stores that can read every record they hold:
// Pins (records by task id) and Leases (by card URL). Scan calls fn for each
// record with its revision, from the caller's goroutine, in no particular
// order; a record written during the scan may or may not be seen. An error
// from fn stops the scan and is returned. Records that do not decode are
// skipped and reported after the scan as an error wrapping ErrCorrupt (fn
// has seen every other record then).
type Scanner[T any] interface {
	Scan(ctx context.Context, fn func(v T, rev uint64) error) error
}
