package store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
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
	st, err := store.Open[testRecord](ctx, js, cfg)
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
		References: store.PinLeaseReferences(st.Pins, func(r testRecord) []string { return []string{r.Digest} }, st.Leases),
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

// TestObjectPutsUnderShippedPermissions: the two object-store calls that
// end in a STREAM.PURGE of one chunk subject (nats.go's Put sends it after
// an upload that failed, for its partial chunks, and after replacing an
// object, for the old chunks) are allowed to the shipped CARDDRIFT user,
// and do their cleanup. Before accounts.conf granted the purge, both were
// permission violations (TestCluster caught the first: a put that timed
// out under load) and left their chunks behind.
func TestObjectPutsUnderShippedPermissions(t *testing.T) {
	sh := natstest.StartShipped(t, filepath.Join("..", "deployments", "nats", "accounts.conf"))
	js := sh.JS
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// An object store of the smallest byte limit: two bodies of 600 KiB do
	// not fit, so the second one's upload discards the first one's oldest
	// chunks.
	cfg := store.Config{StorageLimit: 96 << 20, CardsInlineMax: 1 << 10, CardsObjectMaxBytes: store.MinMaxBytes}
	st, err := store.Open[testRecord](ctx, js, cfg)
	if err != nil {
		t.Fatalf("Open() under the shipped permissions: %v", err)
	}
	body := func(c string) []byte {
		return []byte(`{"name":"large ` + c + `","description":"` + strings.Repeat(c, 600<<10) + `"}`)
	}
	a, b := body("a"), body("b")
	for _, raw := range [][]byte{a, b} {
		if err := st.Cards.Put(ctx, digestOf(raw), raw); err != nil {
			t.Fatalf("Put(%d bytes): %v", len(raw), err)
		}
	}
	if _, err := st.Cards.Get(ctx, digestOf(a)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(a) after b discarded its chunks = %v, want ErrNotFound", err)
	}
	// Stored again: the object is replaced (nats.go purges the old chunks).
	if err := st.Cards.Put(ctx, digestOf(a), a); err != nil {
		t.Fatalf("Put(a) again: %v", err)
	}
	if got, err := st.Cards.Get(ctx, digestOf(a)); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("Get(a) after it was stored again = %d bytes, %v; want the %d stored", len(got), err, len(a))
	}

	// An upload that fails after its first chunk: nats.go purges what it
	// sent, so the stream holds what it held before.
	obj, err := js.ObjectStore(ctx, store.DefaultCardsObjectBucket)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+store.DefaultCardsObjectBucket)
	if err != nil {
		t.Fatal(err)
	}
	errRead := errors.New("the body's reader failed")
	_, err = obj.Put(ctx, jetstream.ObjectMeta{Name: "failed-upload"}, io.MultiReader(bytes.NewReader(a[:200<<10]), iotest.ErrReader(errRead)))
	if !errors.Is(err, errRead) {
		t.Fatalf("Put with a failing reader = %v, want %v", err, errRead)
	}
	// Every chunk subject left is an object's (the failed upload's were
	// purged, and so were the replaced object's old ones).
	objects, err := obj.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, o := range objects {
		live["$O."+store.DefaultCardsObjectBucket+".C."+o.NUID] = true
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("$O."+store.DefaultCardsObjectBucket+".C.>"))
	if err != nil {
		t.Fatal(err)
	}
	for subj, n := range info.State.Subjects {
		if !live[subj] {
			t.Errorf("%d chunk(s) on %s, which is no object's: not purged", n, subj)
		}
	}
	if violations := sh.Violations(); len(violations) > 0 {
		t.Fatalf("permission violations: %v", violations)
	}
}
