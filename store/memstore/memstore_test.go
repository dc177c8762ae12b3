package memstore_test

import (
	"testing"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/storetest"
)

func TestPinsConformance(t *testing.T) {
	storetest.Pins(t, func(*testing.T) store.Pins { return memstore.NewPins() })
}

func TestLeasesConformance(t *testing.T) {
	storetest.Leases(t, func(*testing.T) store.Leases { return memstore.NewLeases() })
}

func TestCardsConformance(t *testing.T) {
	storetest.Cards(t, func(*testing.T) store.Cards { return memstore.NewCards() })
}
