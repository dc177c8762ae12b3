// Package memstore implements the store interfaces (store.Pins, store.Cards,
// store.Leases) in process memory, with the semantics of the JetStream
// implementations: revisions that increase with every write to a store,
// Create that fails on an existing key, compare-and-set Update, and Delete
// that tolerates a missing key.
//
// Use it in tests, in single-process tools (the Fetcher's own leases), and
// as the reference the shared conformance suite (package store's tests) is
// checked against:
//
//	pins := memstore.NewPins[task.Pin]()
//	rev, err := pins.Create(ctx, pin)
//
// Values are stored JSON-encoded, so a caller never shares memory with the
// store. Everything is safe for concurrent use. Nothing here persists.
package memstore
