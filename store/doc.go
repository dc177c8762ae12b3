// Package store keeps carddrift's state in JetStream: the pin of every task
// (Pins), card bodies by digest (Cards) and the shared live-card lease of
// every card URL (Leases). It also provisions every stream and bucket
// carddrift uses, from one Config.
//
// # Topology and buckets
//
// A Config is two things. Its Topology (topology.Topology, placed by
// topology.go: replicas, storage, byte limits) is what clients, planners and
// workers agree on: the lifecycle, outbound-events and
// dead-letter streams, their subjects (the public contract's), the
// lifecycle stream's partitions (PartitionOf, LifecycleFilter) and the
// durable consumers workers share (LifecycleConsumer). The rest, the pins,
// cards and leases buckets, is carddrift's own state. Topology is embedded,
// so cfg.LifecycleStream and cfg.LifecycleConsumer(p) read as before;
// Provision creates the streams and buckets, the worker the consumers.
//
// # Bounded storage
//
// Every stream and bucket Provision makes has a byte limit (their sum is
// Config.StorageLimit, split by StorageShares unless a limit is set) and
// discards its oldest messages at the limit, so a flood of lifecycle
// events or of distinct card bodies makes carddrift forget history, never
// refuse its own writes. Monitor reports each stream's bytes against its
// limit (Prometheus gauges, one log line per crossing); CardsGC removes the
// card bodies no pin or lease references. ParseSize reads sizes for flags.
//
// # Interfaces and implementations
//
// Pins, Cards and Leases are small interfaces with one contract, checked by
// the conformance suite in store/storetest:
//
//   - KVPins, KVCards, KVLeases: JetStream KV buckets (and an Object Store for
//     cards over the KV value limit). Bound by Open or Bind, or built from
//     buckets with NewKVPins, NewKVCards, NewKVLeases.
//   - store/memstore: the same in process memory, for tests and tools.
//   - CachedPins: a bounded read-through cache in front of any Pins that is
//     also a Watcher; see its documentation for the staleness guarantees.
//
// Errors are the sentinels ErrNotFound, ErrExists, ErrConflict,
// ErrInvalidDigest, ErrInvalidID and ErrCorrupt (test with errors.Is), and
// *ConfigError from Config.Validate (errors.As). JetStream's own errors are
// converted at this edge; in particular a stale revision becomes
// ErrConflict, never jetstream.ErrKeyExists.
//
// # Keys
//
// Task ids and card URLs may contain anything. EncodeKey maps them
// injectively to KV-safe keys (unpadded base64url; ids over
// MaxReversibleID bytes are hashed). Card keys are the hex of the digest
// (DigestKey).
//
// # Using it in a worker
//
//	cfg := store.DefaultConfig()   // change names, Replicas, Partitions, TTLs…
//	st, err := store.Open(ctx, js, cfg) // provisions (idempotent) and binds
//	...
//	pins := store.NewCachedPins(st.Pins, 100_000)
//	go pins.Run(ctx) // watch for other workers' writes; cache serves once live
//	for p := range max(cfg.Partitions, 1) {
//		cons, err := js.CreateOrUpdateConsumer(ctx, cfg.LifecycleStream, cfg.LifecycleConsumer(p))
//		...
//	}
//
// Compare-and-set: Get returns a revision; Update with it succeeds only if
// nobody wrote since, else ErrConflict (re-read and decide again). Create is
// the compare-and-set of a missing key (ErrExists if someone was first).
//
// Everything here is safe for concurrent use and takes a context on every
// call that does I/O. Nothing owns the NATS connection; the caller closes it.
package store
