package store_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/store"
)

// kvKeyRe is what nats.go accepts as a KV key (jetstream.validKeyRe); keys
// also must not start or end with '.' nor contain "..".
var kvKeyRe = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

func checkKVSafe(t *testing.T, id, key string) {
	t.Helper()
	if !kvKeyRe.MatchString(key) || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		t.Fatalf("EncodeKey(%.40q) = %q, not a valid KV key", id, key)
	}
	if strings.Contains(key, ".") {
		t.Fatalf("EncodeKey(%.40q) = %q, contains a token separator", id, key)
	}
	if len(key) > 683 {
		t.Fatalf("len(EncodeKey(%.40q)) = %d, want <= 683", id, len(key))
	}
}

func TestEncodeKey(t *testing.T) {
	long := strings.Repeat("x", store.MaxReversibleID+1)
	for _, tc := range []struct {
		name, id, want string
	}{
		{"empty", "", "="},
		{"plain", "task-1", "dGFzay0x"},
		{"dots", "a.b", "YS5i"},
		{"wildcards", "*.>", "Ki4-"},
		{"space", "a b", "YSBi"},
		{"unicode", "é", "w6k"},
		{"max-reversible", strings.Repeat("a", store.MaxReversibleID), strings.Repeat("YWFh", store.MaxReversibleID/3) + "YWE"},
		{"hashed", long, "=h35ade0090e64e74d6ad04204009c23a4e34b82bdf0f4f317fbcc5f26f9b10241"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := store.EncodeKey(tc.id)
			checkKVSafe(t, tc.id, got)
			if got != tc.want {
				t.Fatalf("EncodeKey(%.40q) = %q, want %q", tc.id, got, tc.want)
			}
		})
	}
}

func TestDecodeKey(t *testing.T) {
	for _, tc := range []struct {
		name, key, want string
		err             error // nil, ErrHashedKey, or errAny
	}{
		{"empty-id", "=", "", nil},
		{"plain", "dGFzay0x", "task-1", nil},
		{"hashed", store.EncodeKey(strings.Repeat("x", 600)), "", store.ErrHashedKey},
		{"padded", "YQ==", "", errAny},
		{"non-canonical-bits", "YR", "", errAny},
		{"std-alphabet", "Ki4+", "", errAny},
		{"dot", "YS5i.x", "", errAny},
		{"empty-key", "", "", errAny},
		{"hashed-uppercase", "=h" + strings.Repeat("A", 64), "", errAny},
		{"hashed-short", "=h" + strings.Repeat("a", 63), "", errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.DecodeKey(tc.key)
			switch {
			case tc.err == nil && err != nil:
				t.Fatalf("DecodeKey(%q) error = %v, want nil", tc.key, err)
			case tc.err == errAny && err == nil:
				t.Fatalf("DecodeKey(%q) = %q, nil; want an error", tc.key, got)
			case tc.err != nil && tc.err != errAny && !errors.Is(err, tc.err):
				t.Fatalf("DecodeKey(%q) error = %v, want %v", tc.key, err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("DecodeKey(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// FuzzKey checks that EncodeKey always yields a KV-safe key, round-trips
// through DecodeKey (or is a hash for long ids), and keeps distinct ids
// apart. Seed corpus: testdata/fuzz/FuzzKey.
func FuzzKey(f *testing.F) {
	f.Add("task-1", "task-2")
	f.Add("a.b", "a_b")
	f.Add("", "=")
	f.Add("dGFzay0x", "task-1")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := store.EncodeKey(a), store.EncodeKey(b)
		checkKVSafe(t, a, ka)
		checkKVSafe(t, b, kb)
		if a != b && ka == kb {
			t.Fatalf("EncodeKey(%q) = EncodeKey(%q) = %q", a, b, ka)
		}
		got, err := store.DecodeKey(ka)
		if len(a) > store.MaxReversibleID {
			if !errors.Is(err, store.ErrHashedKey) {
				t.Fatalf("DecodeKey(EncodeKey(long)) error = %v, want %v", err, store.ErrHashedKey)
			}
			return
		}
		if err != nil || got != a {
			t.Fatalf("DecodeKey(EncodeKey(%q)) = %q, %v; want %q, nil", a, got, err, a)
		}
		// Whatever DecodeKey accepts is canonical: it re-encodes to itself.
		if id, err := store.DecodeKey(b); err == nil && store.EncodeKey(id) != b {
			t.Fatalf("EncodeKey(DecodeKey(%q)) = %q, want %q", b, store.EncodeKey(id), b)
		}
	})
}
