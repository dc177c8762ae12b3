package store

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// KVPins is Pins in a JetStream KV bucket: one JSON-encoded record per
// task under EncodeKey(task id). The bucket's TTL (Config.PinsTTL) expires
// pins; each write restarts the clock. It also implements Watcher.
//
// Get is a KV direct get: on a replicated bucket a follower may answer, a
// few milliseconds behind the leader; Create and Update are always decided
// by the leader, so compare-and-set stays exact. Update at the revision of
// a delete marker (only a Watch reveals one) revives the key, as KV does.
type KVPins[T Record[T]] struct {
	s kvJSON[T]
}

// NewKVPins returns Pins stored in kv, a bucket made by Provision (or any KV
// bucket). It does no I/O.
func NewKVPins[T Record[T]](kv jetstream.KeyValue) *KVPins[T] {
	return &KVPins[T]{s: kvJSON[T]{kv: kv, what: "pin", id: func(p *T) string { return (*p).Key() }}}
}

// Create implements Pins.
func (p *KVPins[T]) Create(ctx context.Context, pin T) (uint64, error) {
	return p.s.create(ctx, &pin)
}

// Get implements Pins. A stored pin whose Key differs from taskID is
// reported as ErrCorrupt.
func (p *KVPins[T]) Get(ctx context.Context, taskID string) (T, uint64, error) {
	return p.s.get(ctx, taskID)
}

// Update implements Pins.
func (p *KVPins[T]) Update(ctx context.Context, pin T, rev uint64) (uint64, error) {
	return p.s.update(ctx, &pin, rev)
}

// Delete implements Pins.
func (p *KVPins[T]) Delete(ctx context.Context, taskID string) error {
	return p.s.delete(ctx, taskID)
}

// Watch implements Watcher. It reports expiries too when the bucket keeps
// limit markers (Config.PinsMarkerTTL).
func (p *KVPins[T]) Watch(ctx context.Context) (Watch, error) {
	return p.s.watch(ctx)
}

// KV returns the underlying bucket.
func (p *KVPins[T]) KV() jetstream.KeyValue { return p.s.kv }
