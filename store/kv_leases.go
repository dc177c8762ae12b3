package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// KVLeases is Leases in a JetStream KV bucket: one JSON-encoded Lease per
// card URL under EncodeKey(card URL). Follow starts a LeaseFeed for a
// fetcher's copy of the leases.
type KVLeases struct {
	kvJSON[Lease]
}

var (
	_ Leases         = (*KVLeases)(nil)
	_ Scanner[Lease] = (*KVLeases)(nil)
)

// NewKVLeases returns Leases stored in kv. It does no I/O.
func NewKVLeases(kv jetstream.KeyValue) *KVLeases {
	return &KVLeases{kvJSON[Lease]{kv: kv, what: "lease", id: func(l *Lease) string { return l.CardURL }}}
}

// LeaseUpdate is one lease as a LeaseFeed reports it: the lease stored at
// Rev, or its removal.
type LeaseUpdate struct {
	// Key is the stored key (EncodeKey of the card URL).
	Key string
	// Rev is the revision of the write (the bucket's stream sequence).
	Rev uint64
	// Lease is the lease written at Rev. Zero when Deleted or Corrupt.
	Lease Lease
	// Deleted reports a delete, a purge or an expiry of the key.
	Deleted bool
	// Corrupt reports a value that does not decode, or that belongs to
	// another key (Get would return ErrCorrupt for it).
	Corrupt bool
	// Known reports a write the follower said it holds already (Follow's
	// known: its own write, applied when it made it): its value is not
	// decoded, and Lease is zero.
	Known bool
	// Current marks the end of the bucket's current values: the updates
	// before it were the last value of every key when the feed started,
	// every one after it is a write as it commits. A Current update carries
	// no key.
	Current bool
}

// LeaseFeed is a live feed of the leases in a bucket and their writes,
// started by KVLeases.Follow. The owner calls Next from one goroutine and
// Stop when done.
type LeaseFeed interface {
	// Next blocks until the next update and returns it. It returns
	// ctx.Err() when ctx is done (the feed stays usable) and
	// ErrWatchClosed once the feed was stopped or its connection closed.
	Next(ctx context.Context) (LeaseUpdate, error)
	// Stop ends the feed; safe to call twice.
	Stop() error
}

// Follow starts a LeaseFeed of the bucket: the current lease of every key
// (in revision order), a Current marker, then every write as it commits, in
// revision order (a revision that a later one of the same key supersedes
// may be skipped when the ordered consumer behind it resets). ctx bounds
// the feed's whole life. known, if not nil, is asked of every put before
// its value is decoded, from the goroutine that calls Next: a revision the
// follower holds already is reported Known, not decoded.
func (l *KVLeases) Follow(ctx context.Context, known func(key string, rev uint64) bool) (LeaseFeed, error) {
	w, err := l.kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: follow %s bucket: %w", l.kv.Bucket(), err)
	}
	return &leaseFeed{w: w, known: known}, nil
}

// Head returns the bucket's last revision (0 when it holds nothing): every
// write up to it has committed, and a LeaseFeed that reported Rev ≥ Head
// has reported them all.
func (l *KVLeases) Head(ctx context.Context) (uint64, error) {
	st, err := l.kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: status of %s bucket: %w", l.kv.Bucket(), err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return 0, fmt.Errorf("store: status of %s bucket: no stream state", l.kv.Bucket())
	}
	if s := bs.StreamInfo().State; s.Msgs > 0 {
		return s.LastSeq, nil
	}
	return 0, nil
}

// leaseFeed adapts a jetstream.KeyWatcher to LeaseFeed.
type leaseFeed struct {
	w     jetstream.KeyWatcher
	once  sync.Once
	err   error
	known func(key string, rev uint64) bool
}

func (f *leaseFeed) Stop() error {
	f.once.Do(func() { f.err = f.w.Stop() })
	return f.err
}

func (f *leaseFeed) Next(ctx context.Context) (LeaseUpdate, error) {
	select {
	case <-ctx.Done():
		return LeaseUpdate{}, ctx.Err()
	case e, ok := <-f.w.Updates():
		if !ok {
			return LeaseUpdate{}, ErrWatchClosed
		}
		if e == nil {
			return LeaseUpdate{Current: true}, nil
		}
		u := LeaseUpdate{Key: e.Key(), Rev: e.Revision()}
		if e.Operation() != jetstream.KeyValuePut {
			u.Deleted = true
			return u, nil
		}
		if f.known != nil && f.known(u.Key, u.Rev) {
			u.Known = true
			return u, nil
		}
		if err := json.Unmarshal(e.Value(), &u.Lease); err != nil || EncodeKey(u.Lease.CardURL) != e.Key() {
			u.Lease, u.Corrupt = Lease{}, true
		}
		return u, nil
	}
}
