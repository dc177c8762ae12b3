// Package store keeps carddrift's state in JetStream: the pin of every task
// (Pins), card bodies by digest (Cards) and the shared live-card lease of
// every card URL (Leases). It also provisions every stream and bucket
// carddrift uses, from one Config: its Topology (topology.Topology,
// embedded) plus the buckets that are carddrift's own state.
//
// Every stream and bucket Provision makes has a byte limit (their sum is
// Config.StorageLimit) and discards its oldest messages at the limit, so a
// flood makes carddrift forget history, never refuse its own writes. Monitor
// reports each stream's bytes against its limit; CardsGC removes the card
// bodies no pin or lease references.
//
// Pins, Cards and Leases are small interfaces with one contract, checked by
// the conformance suite of this package's tests: KVPins, KVCards and KVLeases
// (JetStream KV, and an Object Store for large cards), store/memstore (the
// same in memory), and CachedPins (a bounded read-through cache in front of
// any Pins, which sees only this process's reads and writes). JetStream's errors are converted at this edge to the
// sentinels of errors.go (a stale revision is ErrConflict). Task ids and
// card URLs may contain anything: EncodeKey maps them to KV-safe keys.
//
//	st, err := store.Open[task.Pin](ctx, js, store.DefaultConfig()) // provisions and binds
//	pins := store.NewCachedPins(st.Pins, 100_000, store.WithCacheMaxAge(10*time.Second))
//	pins.Forget() // when another process may have written pins
//
// Compare-and-set: Get returns a revision; Update with it succeeds only if
// nobody wrote since, else ErrConflict. Create is the compare-and-set of a
// missing key (ErrExists). Everything here is safe for concurrent use; the
// caller owns and closes the NATS connection.
package store
