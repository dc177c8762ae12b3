// Package storetest is the conformance suite every implementation of the
// store interfaces must pass, so that the JetStream stores, the in-memory
// stores and wrappers such as store.CachedPins behave the same:
//
//	func TestPins(t *testing.T) {
//		storetest.Pins(t, func(t *testing.T) store.Pins { return memstore.NewPins() })
//	}
//
// Each function runs named subtests; the factory is called once per subtest
// and returns an empty store that lives until the subtest ends. Its
// fixtures (Record, Pin, Lease, Digest, Body) serve every package's store
// tests; the JetStream harness is package natstest.
package storetest
