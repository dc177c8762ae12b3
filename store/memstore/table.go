package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/carddrift/carddrift/store"
)

// Option configures a Pins or Leases store.
type Option func(*options)

type options struct{ max int }

// WithMaxEntries bounds the store to n values: a Create into a full store
// first drops an arbitrary other value, silently, so that it suits values
// that can be made again (the Fetcher's own leases).
func WithMaxEntries(n int) Option { return func(o *options) { o.max = n } }

// table is what Pins and Leases are: JSON values by id, one revision
// counter for the whole table, and compare-and-set. Values are
// stored encoded, so callers never share memory with the store and values
// round-trip as they would through a KV bucket.
type table[T any] struct {
	what string
	id   func(*T) string
	opts options

	mu  sync.Mutex
	rev uint64
	m   map[string]entry
}

type entry struct {
	val []byte
	rev uint64
}

func newTable[T any](what string, id func(*T) string, opts []Option) *table[T] {
	t := &table[T]{what: what, id: id, m: map[string]entry{}}
	for _, o := range opts {
		o(&t.opts)
	}
	return t
}

func quote(id string) string {
	if len(id) > 80 {
		id = id[:80] + "…"
	}
	return strconv.Quote(id)
}

// write stores val under id at the next revision (nil val: deletes id).
// t.mu held.
func (t *table[T]) write(id string, val []byte) uint64 {
	t.rev++
	if val == nil {
		delete(t.m, id)
	} else {
		t.m[id] = entry{val: val, rev: t.rev}
	}
	return t.rev
}

// Get returns id's value and revision; store.ErrNotFound if none.
func (t *table[T]) Get(_ context.Context, id string) (T, uint64, error) {
	var v T
	t.mu.Lock()
	e, ok := t.m[id]
	t.mu.Unlock()
	if !ok {
		return v, 0, fmt.Errorf("memstore: get %s %s: %w", t.what, quote(id), store.ErrNotFound)
	}
	if err := json.Unmarshal(e.val, &v); err != nil {
		return v, 0, fmt.Errorf("memstore: get %s %s: %w: %v", t.what, quote(id), store.ErrCorrupt, err)
	}
	return v, e.rev, nil
}

// encode returns the id of v and its JSON, for the write op ("create",
// "update").
func (t *table[T]) encode(op string, v *T) (string, []byte, error) {
	id := t.id(v)
	if !utf8.ValidString(id) {
		return id, nil, fmt.Errorf("memstore: %s %s %s: %w", op, t.what, quote(id), store.ErrInvalidID)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return id, nil, fmt.Errorf("memstore: %s %s %s: %w", op, t.what, quote(id), err)
	}
	return id, b, nil
}

// Create stores v under its id; store.ErrExists if the id has a value.
func (t *table[T]) Create(_ context.Context, v T) (uint64, error) {
	id, b, err := t.encode("create", &v)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[id]; ok {
		return 0, fmt.Errorf("memstore: create %s %s: %w", t.what, quote(id), store.ErrExists)
	}
	if t.opts.max > 0 && len(t.m) >= t.opts.max {
		for k := range t.m {
			delete(t.m, k)
			break
		}
	}
	return t.write(id, b), nil
}

// Update replaces v's value if rev is its current revision.
func (t *table[T]) Update(_ context.Context, v T, rev uint64) (uint64, error) {
	id, b, err := t.encode("update", &v)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[id]
	switch {
	case !ok:
		return 0, fmt.Errorf("memstore: update %s %s at revision %d: %w", t.what, quote(id), rev, store.ErrNotFound)
	case e.rev != rev:
		return 0, fmt.Errorf("memstore: update %s %s at revision %d: %w", t.what, quote(id), rev, store.ErrConflict)
	}
	return t.write(id, b), nil
}

// Delete removes id's value; deleting a missing one is not an error.
func (t *table[T]) Delete(_ context.Context, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.write(id, nil)
	return nil
}

// Scan implements store.Scanner: it decodes a snapshot of the values
// and calls fn with each.
func (t *table[T]) Scan(ctx context.Context, fn func(T, uint64) error) error {
	t.mu.Lock()
	snap := slices.Collect(maps.Values(t.m))
	t.mu.Unlock()
	corrupt := 0
	for _, e := range snap {
		if err := ctx.Err(); err != nil {
			return err
		}
		var v T
		if err := json.Unmarshal(e.val, &v); err != nil {
			corrupt++
			continue
		}
		if err := fn(v, e.rev); err != nil {
			return err
		}
	}
	if corrupt > 0 {
		return fmt.Errorf("memstore: scan %s: %d value(s) skipped: %w", t.what, corrupt, store.ErrCorrupt)
	}
	return nil
}

// Pins is store.Pins in memory. The zero value is not usable; call NewPins.
type Pins[T store.Record[T]] struct {
	*table[T]
}

// NewPins returns an empty pin store.
func NewPins[T store.Record[T]](opts ...Option) *Pins[T] {
	return &Pins[T]{newTable("pin", func(p *T) string { return (*p).Key() }, opts)}
}

// Leases is store.Leases in memory. The zero value is not usable; call
// NewLeases.
type Leases struct {
	*table[store.Lease]
}

var _ store.Leases = (*Leases)(nil)

// NewLeases returns an empty lease store.
func NewLeases(opts ...Option) *Leases {
	return &Leases{newTable("lease", func(l *store.Lease) string { return l.CardURL }, opts)}
}
