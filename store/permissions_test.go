package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/storetest"
)

// TestStorageJobsUnderShippedPermissions: provisioning with byte limits,
// the Monitor and CardsGC (a large body included) need nothing the
// shipped CARDDRIFT user may not publish.
func TestStorageJobsUnderShippedPermissions(t *testing.T) {
	sh := natstest.StartShipped(t, filepath.Join("..", "deployments", "nats", "accounts.conf"))
	js := sh.JS
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	cfg := store.Config{StorageLimit: 96 << 20, CardsInlineMax: 1 << 10}
	st, err := store.Open[storetest.Record](ctx, js, cfg)
	if err != nil {
		t.Fatalf("Open() under the shipped permissions: %v", err)
	}
	mon, err := store.NewMonitor(js, cfg, store.MonitorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mon.Check(ctx); err != nil {
		t.Fatalf("Monitor.Check() under the shipped permissions: %v", err)
	}
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	small := []byte(`{"name":"small"}`)
	for _, b := range [][]byte{large, small} {
		if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	if _, err := st.Leases.Create(ctx, store.Lease{CardURL: "https://a.example.com/card", Digest: digestOf(small)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(2 * time.Hour)
	gc, err := store.NewCardsGC(js, st.Cards, store.GCOptions{
		References: store.PinLeaseReferences(st.Pins, func(r storetest.Record) []string { return []string{r.Digest} }, st.Leases),
		Now:        func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for range 2 {
		res, err := gc.Sweep(ctx)
		if err != nil {
			t.Fatalf("Sweep() under the shipped permissions: %v", err)
		}
		removed += res.Removed
	}
	if removed != 1 {
		t.Fatalf("two sweeps removed %d bodies, want 1 (the large one)", removed)
	}
	if _, err := st.Cards.Get(ctx, digestOf(large)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(large) = %v, want ErrNotFound", err)
	}
	if violations := sh.Violations(); len(violations) > 0 {
		t.Fatalf("permission violations: %v", violations)
	}
}
