package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
)

// kvJSON is what KVPins and KVLeases are: JSON values in a KV bucket under
// EncodeKey(id), with compare-and-set updates and JetStream errors converted
// to this package's. Its methods implement Pins, Leases and Scanner.
type kvJSON[T any] struct {
	kv   jetstream.KeyValue
	what string // "pin", "lease": for error messages
	id   func(*T) string
}

// quote shortens an id for an error message.
func quote(id string) string {
	if len(id) > 80 {
		id = id[:80] + "…"
	}
	return strconv.Quote(id)
}

// Get returns the value stored under id and its revision. A stored value
// that names another id is reported as ErrCorrupt.
func (s *kvJSON[T]) Get(ctx context.Context, id string) (T, uint64, error) {
	var v T
	e, err := s.kv.Get(ctx, EncodeKey(id))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return v, 0, fmt.Errorf("store: get %s %s: %w", s.what, quote(id), ErrNotFound)
		}
		return v, 0, fmt.Errorf("store: get %s %s: %w", s.what, quote(id), err)
	}
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return v, 0, fmt.Errorf("store: get %s %s: %w: %v", s.what, quote(id), ErrCorrupt, err)
	}
	if got := s.id(&v); got != id {
		return v, 0, fmt.Errorf("store: get %s %s: %w: stored value is for %s", s.what, quote(id), ErrCorrupt, quote(got))
	}
	return v, e.Revision(), nil
}

// Create stores v under its id; ErrExists if the id has a value.
func (s *kvJSON[T]) Create(ctx context.Context, v T) (uint64, error) {
	id, b, err := s.encode("create", &v)
	if err != nil {
		return 0, err
	}
	rev, err := s.kv.Create(ctx, EncodeKey(id), b)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("store: create %s %s: %w", s.what, quote(id), ErrExists)
		}
		return 0, fmt.Errorf("store: create %s %s: %w", s.what, quote(id), err)
	}
	return rev, nil
}

// Update replaces v's value if rev is its current revision.
func (s *kvJSON[T]) Update(ctx context.Context, v T, rev uint64) (uint64, error) {
	id, b, err := s.encode("update", &v)
	if err != nil {
		return 0, err
	}
	key := EncodeKey(id)
	if rev == 0 {
		// Revision 0 would make the KV write a create; it is never current.
		return 0, s.casFailed(ctx, id, key, rev)
	}
	n, err := s.kv.Update(ctx, key, b, rev)
	if err != nil {
		// nats.go reports a stale revision as ErrKeyRevisionMismatch, which
		// also matches ErrKeyExists (same server code): test the mismatch.
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, s.casFailed(ctx, id, key, rev)
		}
		return 0, fmt.Errorf("store: update %s %s: %w", s.what, quote(id), err)
	}
	return n, nil
}

// encode returns the id of v and its JSON, for the write op ("create",
// "update"); ErrInvalidID for an id that is not UTF-8.
func (s *kvJSON[T]) encode(op string, v *T) (string, []byte, error) {
	id := s.id(v)
	if !utf8.ValidString(id) {
		return id, nil, fmt.Errorf("store: %s %s %s: %w", op, s.what, quote(id), ErrInvalidID)
	}
	b, err := json.Marshal(*v)
	if err != nil {
		return id, nil, fmt.Errorf("store: %s %s %s: %w", op, s.what, quote(id), err)
	}
	return id, b, nil
}

// casFailed tells a conflict from a missing key after a failed update.
func (s *kvJSON[T]) casFailed(ctx context.Context, id, key string, rev uint64) error {
	_, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		err = ErrNotFound
	case err == nil:
		err = ErrConflict
	}
	return fmt.Errorf("store: update %s %s at revision %d: %w", s.what, quote(id), rev, err)
}

// Delete removes id's value; deleting a missing one is not an error.
func (s *kvJSON[T]) Delete(ctx context.Context, id string) error {
	if err := s.kv.Delete(ctx, EncodeKey(id)); err != nil {
		return fmt.Errorf("store: delete %s %s: %w", s.what, quote(id), err)
	}
	return nil
}

// KV returns the underlying bucket.
func (s *kvJSON[T]) KV() jetstream.KeyValue { return s.kv }
