package store

import "github.com/nats-io/nats.go/jetstream"

// KVPins is Pins in a JetStream KV bucket: one JSON-encoded record per
// task under EncodeKey(task id). The bucket's TTL (Config.PinsTTL) expires
// pins; each write restarts the clock.
//
// Get is a KV direct get: on a replicated bucket a follower may answer, a
// few milliseconds behind the leader; Create and Update are always decided
// by the leader, so compare-and-set stays exact. Update at the revision of
// a delete marker revives the key, as KV does.
type KVPins[T Record[T]] struct {
	kvJSON[T]
}

// NewKVPins returns Pins stored in kv, a bucket made by Provision (or any KV
// bucket). It does no I/O.
func NewKVPins[T Record[T]](kv jetstream.KeyValue) *KVPins[T] {
	return &KVPins[T]{kvJSON[T]{kv: kv, what: "pin", id: func(p *T) string { return (*p).Key() }}}
}
