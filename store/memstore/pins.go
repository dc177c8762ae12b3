package memstore

import (
	"context"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
)

// Pins is store.Pins in memory. The zero value is not usable; call NewPins.
type Pins struct {
	t *table[detector.Pin]
}

var (
	_ store.Pins    = (*Pins)(nil)
	_ store.Watcher = (*Pins)(nil)
)

// NewPins returns an empty pin store.
func NewPins(opts ...Option) *Pins {
	return &Pins{t: newTable("pin", func(p *detector.Pin) string { return p.TaskID }, opts)}
}

// Create implements store.Pins.
func (p *Pins) Create(ctx context.Context, pin detector.Pin) (uint64, error) {
	return p.t.create(ctx, &pin)
}

// Get implements store.Pins.
func (p *Pins) Get(ctx context.Context, taskID string) (detector.Pin, uint64, error) {
	return p.t.get(ctx, taskID)
}

// Update implements store.Pins.
func (p *Pins) Update(ctx context.Context, pin detector.Pin, rev uint64) (uint64, error) {
	return p.t.update(ctx, &pin, rev)
}

// Delete implements store.Pins.
func (p *Pins) Delete(ctx context.Context, taskID string) error {
	return p.t.remove(ctx, taskID)
}

// Watch implements store.Watcher.
func (p *Pins) Watch(ctx context.Context) (store.Watch, error) {
	return p.t.watch(ctx)
}
