package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// Digest returns a well-formed digest derived from seed (not a canonical
// digest of anything: the store does not check).
func Digest(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Body returns n bytes of card-like JSON, different for different seeds.
func Body(seed string, n int) []byte {
	if n == 0 {
		return []byte{}
	}
	b := make([]byte, 0, n+64)
	b = append(b, `{"name":"`+seed+`","description":"`...)
	for i := 0; len(b) < n-2; i++ {
		b = append(b, 'a'+byte(i%26))
	}
	return append(b, `"}`...)[:n]
}

// wantBody checks that cs holds want under d; what says when, for the
// failure.
func wantBody(t *testing.T, cs store.Cards, d string, want []byte, what string) {
	t.Helper()
	got, err := cs.Get(t.Context(), d)
	if err != nil {
		t.Fatalf("Get() %s error = %v", what, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get() %s = %d bytes %.40q, want %d bytes %.40q", what, len(got), got, len(want), want)
	}
}

// Cards runs the conformance suite for store.Cards. newCards returns an
// empty store for each subtest.
func Cards(t *testing.T, newCards func(t *testing.T) store.Cards) {
	t.Run("sizes", func(t *testing.T) {
		cs := newCards(t)
		for _, tc := range []struct {
			name string
			raw  []byte
		}{
			{"empty", []byte{}},
			{"one-byte", []byte("{")},
			{"1KiB", Body("k1", 1<<10)},
			{"100KiB", Body("k100", 100<<10)},
			{"just-under-1MiB", Body("m1", 1<<20-2048)},
			{"over-1MiB", Body("m2", 1<<20+1)},
			{"3MiB", Body("m3", 3<<20)},
			{"binary", []byte{0, 1, 2, 0xff, 0xfe}},
			{"looks-like-marker", append([]byte("\x00carddrift:object\n"), `{"object":"x","size":1}`...)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d := Digest(tc.name)
				if err := cs.Put(t.Context(), d, tc.raw); err != nil {
					t.Fatalf("Put(%d bytes) error = %v", len(tc.raw), err)
				}
				wantBody(t, cs, d, tc.raw, "of "+tc.name)
			})
		}
	})

	t.Run("idempotent-put", func(t *testing.T) {
		cs := newCards(t)
		for _, size := range []int{100, 2 << 20} {
			d := Digest("idem" + strconv.Itoa(size))
			first := Body("first", size)
			for i := range 3 {
				if err := cs.Put(t.Context(), d, first); err != nil {
					t.Fatalf("Put #%d (%d bytes) error = %v", i+1, size, err)
				}
			}
			// Same canonical digest, different bytes as served: the first stays.
			if err := cs.Put(t.Context(), d, Body("second", size)); err != nil {
				t.Fatalf("Put(other bytes) error = %v", err)
			}
			wantBody(t, cs, d, first, "after re-puts (want the first body)")
		}
	})

	t.Run("concurrent-put", func(t *testing.T) {
		cs := newCards(t)
		d := Digest("concurrent")
		raw := Body("concurrent", 4096)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if err := cs.Put(t.Context(), d, raw); err != nil {
					t.Errorf("Put() error = %v", err)
				}
			})
		}
		wg.Wait()
		wantBody(t, cs, d, raw, "after concurrent puts")
	})

	t.Run("get-missing", func(t *testing.T) {
		cs := newCards(t)
		if _, err := cs.Get(t.Context(), Digest("missing")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		cs := newCards(t)
		d := Digest("iso")
		raw := []byte(`{"name":"iso"}`)
		if err := cs.Put(t.Context(), d, raw); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
		raw[2] = 'X'
		got, err := cs.Get(t.Context(), d)
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		got[3] = 'Y'
		again, err := cs.Get(t.Context(), d)
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if want := `{"name":"iso"}`; string(again) != want {
			t.Fatalf("Get() after caller mutations = %q, want %q", again, want)
		}
	})

	t.Run("invalid-digest", func(t *testing.T) {
		cs := newCards(t)
		valid := Digest("x")
		for _, tc := range []struct{ name, digest string }{
			{"empty", ""},
			{"no-prefix", valid[len("sha256:"):]},
			{"other-algorithm", "sha512:" + valid[len("sha256:"):]},
			{"uppercase-hex", "sha256:" + "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"},
			{"short", valid[:len(valid)-1]},
			{"long", valid + "0"},
			{"not-hex", valid[:len(valid)-1] + "g"},
			{"path", "sha256:../../../../etc/passwd"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := cs.Put(t.Context(), tc.digest, []byte("{}")); !errors.Is(err, store.ErrInvalidDigest) {
					t.Fatalf("Put(%q) error = %v, want %v", tc.digest, err, store.ErrInvalidDigest)
				}
				if _, err := cs.Get(t.Context(), tc.digest); !errors.Is(err, store.ErrInvalidDigest) {
					t.Fatalf("Get(%q) error = %v, want %v", tc.digest, err, store.ErrInvalidDigest)
				}
			})
		}
	})
}
