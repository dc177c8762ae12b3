package store

import (
	"context"

	"github.com/carddrift/carddrift/detector"
	"github.com/nats-io/nats.go/jetstream"
)

// KVPins is Pins in a JetStream KV bucket: one JSON-encoded detector.Pin per
// task under EncodeKey(task id). The bucket's TTL (Config.PinsTTL) expires
// pins; each write restarts the clock. It also implements Watcher.
//
// Get is a KV direct get: on a replicated bucket a follower may answer, a
// few milliseconds behind the leader; Create and Update are always decided
// by the leader, so compare-and-set stays exact. Update at the revision of
// a delete marker (only a Watch reveals one) revives the key, as KV does.
type KVPins struct {
	s kvJSON[detector.Pin]
}

var (
	_ Pins    = (*KVPins)(nil)
	_ Watcher = (*KVPins)(nil)
)

// NewKVPins returns Pins stored in kv, a bucket made by Provision (or any KV
// bucket). It does no I/O.
func NewKVPins(kv jetstream.KeyValue) *KVPins {
	return &KVPins{s: kvJSON[detector.Pin]{kv: kv, what: "pin", id: func(p *detector.Pin) string { return p.TaskID }}}
}

// Create implements Pins.
func (p *KVPins) Create(ctx context.Context, pin detector.Pin) (uint64, error) {
	return p.s.create(ctx, &pin)
}

// Get implements Pins. A stored pin whose TaskID differs from taskID is
// reported as ErrCorrupt.
func (p *KVPins) Get(ctx context.Context, taskID string) (detector.Pin, uint64, error) {
	return p.s.get(ctx, taskID)
}

// Update implements Pins.
func (p *KVPins) Update(ctx context.Context, pin detector.Pin, rev uint64) (uint64, error) {
	return p.s.update(ctx, &pin, rev)
}

// Delete implements Pins.
func (p *KVPins) Delete(ctx context.Context, taskID string) error {
	return p.s.delete(ctx, taskID)
}

// Watch implements Watcher. It reports expiries too when the bucket keeps
// limit markers (Config.PinsMarkerTTL).
func (p *KVPins) Watch(ctx context.Context) (Watch, error) {
	return p.s.watch(ctx)
}

// KV returns the underlying bucket.
func (p *KVPins) KV() jetstream.KeyValue { return p.s.kv }
