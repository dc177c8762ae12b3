package memstore

import (
	"context"

	"github.com/carddrift/carddrift/store"
)

// Leases is store.Leases in memory. The zero value is not usable; call
// NewLeases.
type Leases struct {
	t *table[store.Lease]
}

var (
	_ store.Leases  = (*Leases)(nil)
	_ store.Watcher = (*Leases)(nil)
)

// NewLeases returns an empty lease store.
func NewLeases(opts ...Option) *Leases {
	return &Leases{t: newTable("lease", func(l *store.Lease) string { return l.CardURL }, opts)}
}

// Get implements store.Leases.
func (l *Leases) Get(ctx context.Context, cardURL string) (store.Lease, uint64, error) {
	return l.t.get(ctx, cardURL)
}

// Create implements store.Leases.
func (l *Leases) Create(ctx context.Context, lease store.Lease) (uint64, error) {
	return l.t.create(ctx, &lease)
}

// Update implements store.Leases.
func (l *Leases) Update(ctx context.Context, lease store.Lease, rev uint64) (uint64, error) {
	return l.t.update(ctx, &lease, rev)
}

// Watch implements store.Watcher.
func (l *Leases) Watch(ctx context.Context) (store.Watch, error) {
	return l.t.watch(ctx)
}

// Scan implements store.Scanner.
func (l *Leases) Scan(ctx context.Context, fn func(store.Lease, uint64) error) error {
	return l.t.scan(ctx, fn)
}
