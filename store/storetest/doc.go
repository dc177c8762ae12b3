// Package storetest is the conformance suite every implementation of the
// store interfaces must pass, so that the JetStream stores, the in-memory
// stores and wrappers such as store.CachedPins behave the same:
//
//	func TestPins(t *testing.T) {
//		storetest.Pins(t, func(t *testing.T) store.Pins { return memstore.NewPins() })
//	}
//
// Each function runs named subtests; the factory is called once per subtest
// and must return an empty store that lives until the subtest ends (use
// t.Cleanup). The suite covers: Create twice → ErrExists; Get of a missing
// key → ErrNotFound; Update at a stale revision → ErrConflict; Delete then
// Get → ErrNotFound; revisions that increase; ids with dots, spaces,
// wildcards, unicode and very long ids kept apart; values isolated from the
// caller's memory; compare-and-set from many goroutines with exactly one
// winner per revision; idempotent card puts and bodies from empty to larger
// than a default KV value.
//
// Its fixtures (Record, Pin, Lease, Digest, Body) serve every package's
// store tests. The JetStream harness — embedded servers, the shipped
// deployment's permissions, Eventually — is package natstest, beside it.
package storetest
