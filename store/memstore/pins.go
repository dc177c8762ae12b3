package memstore

import (
	"context"

	"github.com/carddrift/carddrift/store"
)

// Pins is store.Pins in memory. The zero value is not usable; call NewPins.
type Pins[T store.Record[T]] struct {
	t *table[T]
}

// NewPins returns an empty pin store.
func NewPins[T store.Record[T]](opts ...Option) *Pins[T] {
	return &Pins[T]{t: newTable("pin", func(p *T) string { return (*p).Key() }, opts)}
}

// Create implements store.Pins.
func (p *Pins[T]) Create(ctx context.Context, pin T) (uint64, error) {
	return p.t.create(ctx, &pin)
}

// Get implements store.Pins.
func (p *Pins[T]) Get(ctx context.Context, taskID string) (T, uint64, error) {
	return p.t.get(ctx, taskID)
}

// Update implements store.Pins.
func (p *Pins[T]) Update(ctx context.Context, pin T, rev uint64) (uint64, error) {
	return p.t.update(ctx, &pin, rev)
}

// Delete implements store.Pins.
func (p *Pins[T]) Delete(ctx context.Context, taskID string) error {
	return p.t.remove(ctx, taskID)
}

// Watch implements store.Watcher.
func (p *Pins[T]) Watch(ctx context.Context) (store.Watch, error) {
	return p.t.watch(ctx)
}

// Scan implements store.Scanner.
func (p *Pins[T]) Scan(ctx context.Context, fn func(T, uint64) error) error {
	return p.t.scan(ctx, fn)
}
