package kvkey

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// kvKeyRe is what nats.go accepts as a KV key (jetstream.validKeyRe); keys
// also must not start or end with '.' nor contain "..".
var kvKeyRe = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

func checkKVSafe(t *testing.T, id, key string) {
	t.Helper()
	if !kvKeyRe.MatchString(key) || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		t.Fatalf("Encode(%.40q) = %q, not a valid KV key", id, key)
	}
	if strings.Contains(key, ".") {
		t.Fatalf("Encode(%.40q) = %q, contains a token separator", id, key)
	}
	if len(key) > MaxLen {
		t.Fatalf("len(Encode(%.40q)) = %d, want <= %d", id, len(key), MaxLen)
	}
}

func TestMaxLen(t *testing.T) {
	if got := len(Encode(strings.Repeat("\xff", MaxReversible))); got != MaxLen {
		t.Fatalf("len(Encode(MaxReversible bytes)) = %d, want %d", got, MaxLen)
	}
	if MaxLen != 683 {
		t.Fatalf("MaxLen = %d, want 683 (as store documents)", MaxLen)
	}
}

// FuzzKey checks that Encode always yields a KV-safe key, round-trips
// through Decode (or is a hash for long ids), keeps distinct ids apart, and
// that whatever Decode accepts is canonical. Seed corpus:
// testdata/fuzz/FuzzKey.
func FuzzKey(f *testing.F) {
	f.Add("task-1", "task-2")
	f.Add("a.b", "a_b")
	f.Add("", "=")
	f.Add("dGFzay0x", "task-1")
	// The ids store's TestEncodeKey pins the keys of.
	f.Add("*.>", "a b")
	f.Add("é", strings.Repeat("a", MaxReversible))
	f.Add(strings.Repeat("x", MaxReversible+1), "")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := Encode(a), Encode(b)
		checkKVSafe(t, a, ka)
		checkKVSafe(t, b, kb)
		if a != b && ka == kb {
			t.Fatalf("Encode(%q) = Encode(%q) = %q", a, b, ka)
		}
		got, err := Decode(ka)
		if len(a) > MaxReversible {
			if !errors.Is(err, ErrHashed) {
				t.Fatalf("Decode(Encode(long)) error = %v, want %v", err, ErrHashed)
			}
		} else if err != nil || got != a {
			t.Fatalf("Decode(Encode(%q)) = %q, %v; want %q, nil", a, got, err, a)
		}
		// Whatever Decode accepts is canonical: it re-encodes to itself.
		if id, err := Decode(b); err == nil && Encode(id) != b {
			t.Fatalf("Encode(Decode(%q)) = %q, want %q", b, Encode(id), b)
		}
	})
}

// MaxLen is the longest key Encode returns: base64 of MaxReversible bytes.
const MaxLen = (MaxReversible*8 + 5) / 6
