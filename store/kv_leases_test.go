package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
)

// Follow reports the bucket's current leases, the Current marker, then
// every write as it commits — puts with their leases, removals, values that
// do not decode — and Head is the last revision, which the feed reaches.
func TestKVLeasesFollow(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		kv := newKV(t, js, "leases", jetstream.KeyValueConfig{})
		ls := store.NewKVLeases(kv)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if h, err := ls.Head(ctx); err != nil || h != 0 {
			t.Fatalf("Head(empty) = %d, %v; want 0", h, err)
		}
		a, b := "https://a.example/card.json", "https://b.example/card.json"
		revA, err := ls.Create(ctx, store.Lease{CardURL: a, Digest: "sha256:" + hex64('a')})
		if err != nil {
			t.Fatal(err)
		}
		feed, err := ls.Follow(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = feed.Stop() }()
		next := func(what string) store.LeaseUpdate {
			t.Helper()
			u, err := feed.Next(ctx)
			if err != nil {
				t.Fatalf("%s: Next = %v", what, err)
			}
			return u
		}
		if u := next("current value"); u.Key != store.EncodeKey(a) || u.Rev != revA || u.Lease.CardURL != a || u.Deleted || u.Corrupt {
			t.Fatalf("current value = %+v, want a's lease at %d", u, revA)
		}
		if u := next("marker"); !u.Current {
			t.Fatalf("after the current values = %+v, want the Current marker", u)
		}
		revB, err := ls.Create(ctx, store.Lease{CardURL: b})
		if err != nil {
			t.Fatal(err)
		}
		if u := next("create"); u.Rev != revB || u.Lease.CardURL != b {
			t.Fatalf("create = %+v, want b's lease at %d", u, revB)
		}
		if err := kv.Delete(ctx, store.EncodeKey(a)); err != nil {
			t.Fatal(err)
		}
		if u := next("delete"); !u.Deleted || u.Key != store.EncodeKey(a) {
			t.Fatalf("delete = %+v, want a removed", u)
		}
		// A value stored under another lease's key, and one that is not JSON.
		if _, err := kv.Put(ctx, store.EncodeKey(a), []byte(`{"cardUrl":"`+b+`"}`)); err != nil {
			t.Fatal(err)
		}
		if u := next("misplaced"); !u.Corrupt || u.Key != store.EncodeKey(a) {
			t.Fatalf("a lease under another key = %+v, want Corrupt", u)
		}
		last, err := kv.Put(ctx, store.EncodeKey(b), []byte(`not json`))
		if err != nil {
			t.Fatal(err)
		}
		u := next("not JSON")
		if !u.Corrupt {
			t.Fatalf("a value that is not JSON = %+v, want Corrupt", u)
		}
		if h, err := ls.Head(ctx); err != nil || h != last || u.Rev != h {
			t.Fatalf("Head = %d, %v; want %d, the feed's last revision %d", h, err, last, u.Rev)
		}
		if err := feed.Stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := feed.Next(ctx); !errors.Is(err, store.ErrWatchClosed) {
			t.Fatalf("Next after Stop = %v, want ErrWatchClosed", err)
		}
	})
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// A put the follower says it holds (known) is reported Known without its
// value being decoded: a value that would be Corrupt is not even read.
func TestKVLeasesFollowKnown(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		kv := newKV(t, js, "leases", jetstream.KeyValueConfig{})
		ls := store.NewKVLeases(kv)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		key := store.EncodeKey("https://a.example/card.json")
		own, err := kv.Put(ctx, key, []byte(`not json`))
		if err != nil {
			t.Fatal(err)
		}
		other, err := kv.Put(ctx, key, []byte(`not json either`))
		if err != nil {
			t.Fatal(err)
		}
		var asked []uint64
		feed, err := ls.Follow(ctx, func(k string, rev uint64) bool {
			asked = append(asked, rev)
			return k == key && rev == own
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = feed.Stop() }()
		// History 1: the current value is the second put, not known.
		if u, err := feed.Next(ctx); err != nil || u.Rev != other || !u.Corrupt || u.Known {
			t.Fatalf("current value = %+v, %v; want the other write, decoded (Corrupt)", u, err)
		}
		if u, err := feed.Next(ctx); err != nil || !u.Current {
			t.Fatalf("marker = %+v, %v", u, err)
		}
		again, err := kv.Put(ctx, key, []byte(`still not json`))
		if err != nil {
			t.Fatal(err)
		}
		own = again // the follower holds this one
		if u, err := feed.Next(ctx); err != nil || u.Rev != again || !u.Known || u.Corrupt {
			t.Fatalf("a known write = %+v, %v; want Known, not decoded", u, err)
		}
		if len(asked) != 2 {
			t.Errorf("known asked of revisions %v, want the two puts", asked)
		}
	})
}

// A lease the previous version wrote with a claim on it (holder, heldUntil,
// confirming) reads as the observation it carries, by Get and by Follow;
// the claim is dropped when the lease is written again.
func TestKVLeasesReadPreviousVersionClaim(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		kv := newKV(t, js, "leases", jetstream.KeyValueConfig{})
		ls := store.NewKVLeases(kv)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		url := "https://a.example/card.json"
		old := `{"cardUrl":"` + url + `","digest":"sha256:` + hex64('a') + `","etag":"\"v1\"","maxAge":30000000000,` +
			`"fetchedAt":"2026-11-10T12:00:00Z","lastFullFetch":"2026-11-10T12:00:00Z",` +
			`"holder":"worker-1","heldUntil":"2026-11-10T12:00:10Z","confirming":true}`
		rev, err := kv.Put(ctx, store.EncodeKey(url), []byte(old))
		if err != nil {
			t.Fatal(err)
		}
		want := store.Lease{CardURL: url, Digest: "sha256:" + hex64('a'), ETag: `"v1"`, MaxAge: 30 * time.Second,
			FetchedAt: time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC), LastFullFetch: time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)}
		l, got, err := ls.Get(ctx, url)
		if err != nil || got != rev || l.CardURL != want.CardURL || l.Digest != want.Digest || l.ETag != want.ETag ||
			l.MaxAge != want.MaxAge || !l.FetchedAt.Equal(want.FetchedAt) || !l.LastFullFetch.Equal(want.LastFullFetch) {
			t.Fatalf("Get = %+v at %d, %v; want %+v at %d", l, got, err, want, rev)
		}
		feed, err := ls.Follow(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = feed.Stop() }()
		if u, err := feed.Next(ctx); err != nil || u.Corrupt || u.Lease.Digest != want.Digest {
			t.Fatalf("Follow = %+v, %v; want the lease", u, err)
		}
		if _, err := ls.Update(ctx, l, rev); err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, store.EncodeKey(url))
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"holder", "heldUntil", "confirming"} {
			if strings.Contains(string(e.Value()), `"`+field+`"`) {
				t.Errorf("written again: %s, still with %q", e.Value(), field)
			}
		}
	})
}
