package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carddrift/carddrift/store"
)

func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// TestCardsGC: bodies no pin or lease references are removed after two
// sweeps (the large one from the Object Store too); referenced ones stay
// until their pin and lease are gone; a removed body can be stored again.
func TestCardsGC(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10})
	ctx := t.Context()
	body := func(s string) ([]byte, string) { b := []byte(`{"name":"` + s + `"}`); return b, digestOf(b) }
	pinned, pinnedD := body("pinned")
	leased, leasedD := body("leased")
	orphan, orphanD := body("orphan")
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	largeD := digestOf(large)
	for _, c := range []struct {
		raw    []byte
		digest string
	}{{pinned, pinnedD}, {leased, leasedD}, {orphan, orphanD}, {large, largeD}} {
		if err := st.Cards.Put(ctx, c.digest, c.raw); err != nil {
			t.Fatalf("Put(%s) error = %v", c.digest, err)
		}
	}
	pin := testPin("task-1", 0)
	pin.Digest = pinnedD
	if _, err := st.Pins.Create(ctx, pin); err != nil {
		t.Fatalf("Create(pin) error = %v", err)
	}
	lease := store.Lease{CardURL: "https://agent.example.com/.well-known/agent-card.json", Digest: leasedD, FetchedAt: time.Now()}
	if _, err := st.Leases.Create(ctx, lease); err != nil {
		t.Fatalf("Create(lease) error = %v", err)
	}

	now := time.Now()
	reg := prometheus.NewPedanticRegistry()
	gc := newGC(t, js, st.Cards, store.GCOptions{
		References: store.PinLeaseReferences(st.Pins, func(r testRecord) []string { return []string{r.Digest} }, st.Leases),
		Grace:      time.Hour, Now: func() time.Time { return now }, Registerer: reg,
	})
	sweep := func(wantRemoved int) store.SweepResult {
		t.Helper()
		res, err := gc.Sweep(ctx)
		if err != nil || res.Removed != wantRemoved {
			t.Fatalf("Sweep() = %+v, %v, want %d removed", res, err, wantRemoved)
		}
		return res
	}
	has := func(digest string) bool {
		t.Helper()
		_, err := st.Cards.Get(ctx, digest)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(%s) error = %v", digest, err)
		}
		return err == nil
	}

	// Within the grace period nothing is a candidate.
	sweep(0)
	sweep(0)
	now = now.Add(2 * time.Hour)
	if res := sweep(0); res.Candidates != 2 { // first strike: orphan, large
		t.Fatalf("first sweep past grace: %+v, want 2 candidates", res)
	}
	sweep(2)
	for d, want := range map[string]bool{pinnedD: true, leasedD: true, orphanD: false, largeD: false} {
		if got := has(d); got != want {
			t.Fatalf("after two sweeps, body %s present = %v, want %v", d, got, want)
		}
	}
	key, _ := store.DigestKey(largeD)
	obj, err := js.ObjectStore(ctx, store.DefaultCardsObjectBucket)
	if err != nil {
		t.Fatalf("ObjectStore() error = %v", err)
	}
	if _, err := obj.GetInfo(ctx, key); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("object of the large body: GetInfo error = %v, want ErrObjectNotFound", err)
	}
	// Its chunks are gone too (no STREAM.PURGE: a rollup), not just its name.
	if info := streamInfo(t, js, "OBJ_"+store.DefaultCardsObjectBucket); info.State.Bytes >= uint64(len(large)) {
		t.Fatalf("object store holds %d bytes after the removal, want less than the %d-byte body", info.State.Bytes, len(large))
	}

	// The pin and the lease go: their bodies follow.
	if err := st.Pins.Delete(ctx, "task-1"); err != nil {
		t.Fatalf("Delete(pin) error = %v", err)
	}
	if err := st.Leases.KV().Delete(ctx, store.EncodeKey(lease.CardURL)); err != nil {
		t.Fatalf("delete lease error = %v", err)
	}
	sweep(0)
	sweep(2)
	if has(pinnedD) || has(leasedD) {
		t.Fatalf("bodies of a deleted pin and lease still present")
	}
	if got := valueOfPlain(t, reg, "carddrift_store_cards_removed_total"); got != 4 {
		t.Fatalf("carddrift_store_cards_removed_total = %v, want 4", got)
	}

	// A removed body is stored again when it comes back.
	if err := st.Cards.Put(ctx, orphanD, orphan); err != nil || !has(orphanD) {
		t.Fatalf("Put(removed body) = %v, present %v", err, has(orphanD))
	}
}

// TestCardsGCBatch: a sweep reads at most Batch bodies, and successive
// sweeps walk the whole bucket.
func TestCardsGCBatch(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20})
	ctx := t.Context()
	const n = 5
	for i := range n {
		b := []byte(`{"n":` + string(rune('0'+i)) + `}`)
		if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
	}
	now := time.Now().Add(2 * time.Hour)
	gc := newGC(t, js, st.Cards, store.GCOptions{
		References: func(_ context.Context, mark func(string)) error { return nil },
		Batch:      2, Now: func() time.Time { return now },
	})
	removed := 0
	for i := range 8 {
		res, err := gc.Sweep(ctx)
		if err != nil {
			t.Fatalf("Sweep(%d) error = %v", i, err)
		}
		if res.Examined > 2 {
			t.Fatalf("Sweep(%d) examined %d bodies, want ≤ 2", i, res.Examined)
		}
		removed += res.Removed
	}
	if removed != n {
		t.Fatalf("8 sweeps of batch 2 removed %d of %d unreferenced bodies", removed, n)
	}
}

// TestCardsGCKeepsOnError: a References that fails removes nothing.
func TestCardsGCKeepsOnError(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20})
	ctx := t.Context()
	b := []byte(`{"name":"x"}`)
	if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
		t.Fatalf("Put() error = %v", err)
	}
	now := time.Now().Add(2 * time.Hour)
	boom := errors.New("scan failed")
	gc := newGC(t, js, st.Cards, store.GCOptions{
		References: func(_ context.Context, mark func(string)) error { return boom },
		Now:        func() time.Time { return now },
	})
	for range 3 {
		if _, err := gc.Sweep(ctx); !errors.Is(err, boom) {
			t.Fatalf("Sweep() error = %v, want %v", err, boom)
		}
	}
	if _, err := st.Cards.Get(ctx, digestOf(b)); err != nil {
		t.Fatalf("Get() after failed sweeps error = %v, want the body kept", err)
	}
}

// valueOfPlain returns the value of an unlabelled counter or gauge in reg.
func valueOfPlain(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s in the registry", name)
	return 0
}

// TestCardsGCPinWrittenAfterScan: a pin written between a sweep's
// reference scan and its removals (the worker stores a body that is
// already there, a no-op, then writes the pin naming it) keeps its body,
// inline or in the Object Store. The scan cannot see the pin; the sweep
// must not leave it naming a removed body.
func TestCardsGCPinWrittenAfterScan(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10})
	ctx := t.Context()
	small := []byte(`{"name":"client card"}`)
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	smallD, largeD := digestOf(small), digestOf(large)
	for _, b := range [][]byte{small, large} {
		if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
	}
	now := time.Now().Add(2 * time.Hour)
	scans := 0
	scan := store.PinLeaseReferences(st.Pins, func(r testRecord) []string { return []string{r.Digest} }, st.Leases)
	refs := func(ctx context.Context, mark func(string)) error {
		err := scan(ctx, mark)
		scans++
		if scans == 2 { // the second sweep: after its scan, before it removes
			for i, d := range []string{smallD, largeD} {
				// What the worker does: the body is there (Put is a no-op), then the pin.
				if err := st.Cards.Put(ctx, d, map[string][]byte{smallD: small, largeD: large}[d]); err != nil {
					t.Errorf("Put() error = %v", err)
				}
				pin := testPin("task-late-"+string(rune('a'+i)), 0)
				pin.Digest = d
				if _, err := st.Pins.Create(ctx, pin); err != nil {
					t.Errorf("Create(pin) error = %v", err)
				}
			}
		}
		return err
	}
	gc := newGC(t, js, st.Cards, store.GCOptions{References: refs, Now: func() time.Time { return now }})
	sweeps(t, gc, 2)
	for _, c := range []struct {
		d    string
		want []byte
	}{{smallD, small}, {largeD, large}} {
		got, err := st.Cards.Get(ctx, c.d)
		if err != nil || string(got) != string(c.want) {
			t.Errorf("body %s named by a pin written during the sweep: Get() = %d bytes, %v; want it kept", c.d, len(got), err)
		}
	}
	// Nothing references them after the pins go: they are removed then.
	for _, k := range []string{"task-late-a", "task-late-b"} {
		if err := st.Pins.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(pin) error = %v", err)
		}
	}
	if removed := sweeps(t, gc, 2); removed != 2 {
		t.Fatalf("two sweeps after the pins went removed %d bodies, want 2", removed)
	}
}

// TestCardsGCLargeBodyStoredDuringRemoval: a large body stored again while
// a sweep removes it (the writer finds no marker but the object still
// there, so it writes only the marker) is not left as a marker naming a
// deleted object, which every later Put would take for the body stored.
func TestCardsGCLargeBodyStoredDuringRemoval(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10})
	ctx := t.Context()
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	largeD := digestOf(large)
	if err := st.Cards.Put(ctx, largeD, large); err != nil {
		t.Fatalf("Put() error = %v", err)
	}
	now := time.Now().Add(2 * time.Hour)
	scans := 0
	refs := func(ctx context.Context, mark func(string)) error {
		scans++
		if scans == 3 { // the second sweep, after its purge: a writer brings the body
			if err := st.Cards.Put(ctx, largeD, large); err != nil {
				t.Errorf("Put() during the sweep error = %v", err)
			}
		}
		return nil
	}
	gc := newGC(t, js, st.Cards, store.GCOptions{References: refs, Now: func() time.Time { return now }})
	sweeps(t, gc, 2)
	if scans < 3 {
		t.Fatalf("References called %d times, want the second sweep to check again after purging", scans)
	}
	// Whatever the sweep did, storing the body now must leave it readable.
	if err := st.Cards.Put(ctx, largeD, large); err != nil {
		t.Fatalf("Put() after the sweep error = %v", err)
	}
	if got, err := st.Cards.Get(ctx, largeD); err != nil || string(got) != string(large) {
		t.Fatalf("Get() after Put() = %d bytes, %v; want the body", len(got), err)
	}
}

// TestCardsLargeBodyDroppedByLimit: the large-cards Object Store at its
// byte limit discards its oldest chunks first, which leaves objects whose
// name is still there and some or all of whose chunks are gone. Get of
// every body is then the body or ErrNotFound (as Config.CardsObjectMaxBytes
// promises: judged as pinned by digest alone), never a read that waits for
// chunks that will not come.
func TestCardsLargeBodyDroppedByLimit(t *testing.T) {
	_, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10, CardsObjectMaxBytes: store.MinMaxBytes})
	ctx := t.Context()
	var ds []string
	for i := range 40 { // 40 bodies of 2 chunks each, 8 MiB into 1 MiB
		b := []byte(`{"n":` + strings.Repeat("1", i+1) + `,"d":"` + strings.Repeat("x", 200<<10) + `"}`)
		ds = append(ds, digestOf(b))
		if err := st.Cards.Put(ctx, ds[i], b); err != nil {
			t.Fatalf("Put(%d) error = %v", i, err)
		}
	}
	found := 0
	for i, d := range ds {
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := st.Cards.Get(gctx, d)
		cancel()
		switch {
		case err == nil:
			found++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("Get(body %d) error = %v, want the body or ErrNotFound", i, err)
		}
	}
	if found == 0 || found == len(ds) {
		t.Fatalf("%d of %d bodies readable, want the newest only", found, len(ds))
	}
	// A dropped body stored again (its marker is still there) is read
	// back: the oldest, and the one whose chunks went only in part.
	for _, i := range []int{0, len(ds) - found - 1} {
		b := []byte(`{"n":` + strings.Repeat("1", i+1) + `,"d":"` + strings.Repeat("x", 200<<10) + `"}`)
		if err := st.Cards.Put(ctx, ds[i], b); err != nil {
			t.Fatalf("Put(body %d) again error = %v", i, err)
		}
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		got, err := st.Cards.Get(gctx, ds[i])
		cancel()
		if err != nil || string(got) != string(b) {
			t.Errorf("Get(body %d) after storing it again = %d bytes, %v; want the body", i, len(got), err)
		}
	}
}

// sweeps runs n sweeps of gc and returns how many bodies they removed.
// openStores opens the stores with cfg on a fresh embedded JetStream.
func openStores(t *testing.T, cfg store.Config) (jetstream.JetStream, *store.Stores[testRecord]) {
	t.Helper()
	js := startJS(t)
	st, err := store.Open[testRecord](t.Context(), js, cfg)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	return js, st
}

// newGC is NewCardsGC of cards with o, which must succeed.
func newGC(t *testing.T, js jetstream.JetStream, cards *store.KVCards, o store.GCOptions) *store.CardsGC {
	t.Helper()
	gc, err := store.NewCardsGC(js, cards, o)
	if err != nil {
		t.Fatalf("NewCardsGC() error = %v", err)
	}
	return gc
}

func sweeps(t *testing.T, gc *store.CardsGC, n int) (removed int) {
	t.Helper()
	for i := range n {
		res, err := gc.Sweep(t.Context())
		if err != nil {
			t.Fatalf("Sweep(%d) error = %v", i, err)
		}
		removed += res.Removed
	}
	return removed
}
