package storetest

import (
	"strconv"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// Leases runs the conformance suite for store.Leases. newLeases returns an
// empty store for each subtest.
func Leases(t *testing.T, newLeases func(t *testing.T) store.Leases) {
	t.Run("scan", func(t *testing.T) {
		scanSuite(t, newLeases(t), func(i int) store.Lease { return Lease("https://scan.example/"+strconv.Itoa(i), i) },
			func(l store.Lease) string { return l.CardURL }, nil)
	})

	casSuite(t, func(t *testing.T) casStore[store.Lease] { return newLeases(t) },
		"https://agent.example.com/.well-known/agent-card.json", casValues[store.Lease]{
			value:  Lease,
			mark:   func(l store.Lease, holder string) store.Lease { l.ETag = holder; return l },
			holder: func(l store.Lease) string { return l.ETag },
		})
}
