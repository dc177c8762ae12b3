package store

import (
	"context"
	"errors"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// Errors returned by every store implementation. Implementations convert their
// backend's errors to these at the package edge; callers test with errors.Is.
var (
	// ErrNotFound is returned by Get when the key does not exist (or was deleted).
	ErrNotFound = errors.New("store: not found")
	// ErrExists is returned by Create when the key already exists.
	ErrExists = errors.New("store: already exists")
	// ErrConflict is returned by Update when the revision given is not the
	// current one (someone else wrote first).
	ErrConflict = errors.New("store: revision conflict")
)

// Pins stores one pin per task id. Safe for concurrent use.
type Pins interface {
	// Create stores a new pin; ErrExists if the task already has one.
	Create(ctx context.Context, pin detector.Pin) (rev uint64, err error)
	// Get returns the task's pin and its revision; ErrNotFound if none.
	Get(ctx context.Context, taskID string) (detector.Pin, uint64, error)
	// Update replaces the pin if rev is current; ErrConflict otherwise,
	// ErrNotFound if the pin was deleted.
	Update(ctx context.Context, pin detector.Pin, rev uint64) (uint64, error)
	// Delete removes the task's pin; deleting a missing pin is not an error.
	Delete(ctx context.Context, taskID string) error
}

// Cards stores card bodies, content-addressed by canonical digest
// ("sha256:<hex>"). Bodies are stored exactly as served. Safe for concurrent use.
type Cards interface {
	// Put stores raw under digest. Putting the same digest again is a no-op.
	Put(ctx context.Context, digest string, raw []byte) error
	// Get returns the body stored under digest; ErrNotFound if none.
	Get(ctx context.Context, digest string) ([]byte, error)
}

// Lease is the last observation of one agent card URL, shared by every worker
// so that one lease costs one fetch across the fleet of workers.
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
	// Holder and HeldUntil record a worker's claim to fetch now: others wait for
	// its result instead of fetching too, unless the claim has expired.
	Holder    string    `json:"holder,omitempty"`
	HeldUntil time.Time `json:"heldUntil,omitempty"`
}

// Fresh reports whether the lease's observation is still valid at now.
func (l Lease) Fresh(now time.Time) bool {
	return l.Digest != "" && now.Before(l.FetchedAt.Add(l.MaxAge))
}

// Held reports whether another fetch is claimed and unexpired at now.
func (l Lease) Held(now time.Time) bool {
	return l.Holder != "" && now.Before(l.HeldUntil)
}

// Leases stores one Lease per card URL with compare-and-set updates. Safe for
// concurrent use.
type Leases interface {
	// Get returns the lease and its revision; ErrNotFound if none.
	Get(ctx context.Context, cardURL string) (Lease, uint64, error)
	// Create stores a new lease; ErrExists if one exists.
	Create(ctx context.Context, l Lease) (uint64, error)
	// Update replaces the lease if rev is current; ErrConflict otherwise.
	Update(ctx context.Context, l Lease, rev uint64) (uint64, error)
}
