package fetcher

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// refusingCards is a store.Cards whose Put fails while refuse is set (a
// store that is full, or too slow for StoreTimeout).
type refusingCards struct {
	*memCards
	refuse atomic.Bool
	puts   atomic.Int64
}

var errFull = errors.New("insufficient storage")

func (c *refusingCards) Put(ctx context.Context, digest string, raw []byte) error {
	c.puts.Add(1)
	if c.refuse.Load() {
		return errFull
	}
	return c.memCards.Put(ctx, digest, raw)
}

// An observation whose body could not be stored is not returned: a pin, a
// lease or a card.drift that named its digest would promise a body no
// reader finds (a later transition would judge the pin pinned-card-unknown,
// replay could not re-evaluate). Observe fails with ErrStore, the lease is
// not advanced to the digest, OnStoreError and OnFetch hear of it, and once
// the store takes writes again the next Observe stores the body and leases
// it.
func TestObserveFailsWhenTheBodyIsNotStored(t *testing.T) {
	a := newAgent(t, cardJSON("1", true), `"v1"`, "max-age=60")
	o, leases := leasedOptions(newClock())
	cards := &refusingCards{memCards: newMemCards()}
	o.Cards = cards
	var storeErrs, fetches atomic.Int64
	o.OnStoreError = func(err error) {
		if !errors.Is(err, ErrStore) || !errors.Is(err, errFull) {
			t.Errorf("OnStoreError(%v): want ErrStore wrapping the store's error", err)
		}
		storeErrs.Add(1)
	}
	o.OnFetch = func(Observation, error) { fetches.Add(1) }
	f := newFetcher(t, o)
	url := a.url("/card")
	ctx := context.Background()

	cards.refuse.Store(true)
	obs, err := f.Observe(ctx, url, false)
	if !errors.Is(err, ErrStore) || !errors.Is(err, errFull) {
		t.Fatalf("Observe with the card store refusing = (%q, %v), want an ErrStore error", obs.Digest, err)
	}
	if obs.Digest != "" || obs.Card != nil {
		t.Errorf("Observe returned an observation (%q) with its error", obs.Digest)
	}
	if storeErrs.Load() != 1 || fetches.Load() != 1 {
		t.Errorf("OnStoreError calls %d, OnFetch calls %d; want 1 and 1", storeErrs.Load(), fetches.Load())
	}
	if l, _, err := leases.Get(ctx, url); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lease after the refused body = %+v, %v; want none (nothing written)", l, err)
	}

	cards.refuse.Store(false)
	obs, err = f.Observe(ctx, url, false)
	if err != nil {
		t.Fatalf("Observe once the store takes writes: %v", err)
	}
	if _, err := cards.Get(ctx, obs.Digest); err != nil {
		t.Errorf("body of the observed digest: %v, want it stored", err)
	}
	if l, _, _ := leases.Get(ctx, url); l.Digest != obs.Digest {
		t.Errorf("lease digest %q, want the observed %q", l.Digest, obs.Digest)
	}
	if got := a.requests.Load(); got != 2 {
		t.Errorf("agent requests = %d, want 2 (the refused observation was not leased)", got)
	}
}
