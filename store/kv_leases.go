package store

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// KVLeases is Leases in a JetStream KV bucket: one JSON-encoded Lease per
// card URL under EncodeKey(card URL). It also implements Watcher, so a
// worker waiting for another's fetch can wake on its Update.
type KVLeases struct {
	s kvJSON[Lease]
}

var (
	_ Leases  = (*KVLeases)(nil)
	_ Watcher = (*KVLeases)(nil)
)

// NewKVLeases returns Leases stored in kv. It does no I/O.
func NewKVLeases(kv jetstream.KeyValue) *KVLeases {
	return &KVLeases{s: kvJSON[Lease]{kv: kv, what: "lease", id: func(l *Lease) string { return l.CardURL }}}
}

// Get implements Leases.
func (l *KVLeases) Get(ctx context.Context, cardURL string) (Lease, uint64, error) {
	return l.s.get(ctx, cardURL)
}

// Create implements Leases.
func (l *KVLeases) Create(ctx context.Context, lease Lease) (uint64, error) {
	return l.s.create(ctx, &lease)
}

// Update implements Leases.
func (l *KVLeases) Update(ctx context.Context, lease Lease, rev uint64) (uint64, error) {
	return l.s.update(ctx, &lease, rev)
}

// Watch implements Watcher.
func (l *KVLeases) Watch(ctx context.Context) (Watch, error) {
	return l.s.watch(ctx)
}

// KV returns the underlying bucket.
func (l *KVLeases) KV() jetstream.KeyValue { return l.s.kv }
