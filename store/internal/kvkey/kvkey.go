package kvkey

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// MaxReversible is the longest id, in bytes, that Encode stores reversibly.
const MaxReversible = 512

// Key prefixes. The unpadded base64url alphabet ([A-Za-z0-9_-]) never
// contains '=', so keys that start with '=' are distinct from every
// reversible key.
const (
	emptyKey  = "="
	hashedPre = "=h"
)

var (
	// ErrHashed is returned by Decode for the key of a long id.
	ErrHashed = errors.New("store: key holds a hash of a long id")
	// ErrNotKey is returned by Decode for a string Encode never produces.
	ErrNotKey = errors.New("store: not a key made by EncodeKey")
)

// Encode maps id to a KV key: "=" for "", unpadded base64url for ids up to
// MaxReversible bytes, "=h" + hex SHA-256 for longer ones.
func Encode(id string) string {
	switch {
	case id == "":
		return emptyKey
	case len(id) > MaxReversible:
		sum := sha256.Sum256([]byte(id))
		return hashedPre + hex.EncodeToString(sum[:])
	}
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// Decode inverts Encode: ErrHashed for the key of a long id, ErrNotKey for
// anything Encode does not produce.
func Decode(key string) (string, error) {
	switch {
	case key == emptyKey:
		return "", nil
	case len(key) == len(hashedPre)+2*sha256.Size && key[:len(hashedPre)] == hashedPre:
		if !IsLowerHex(key[len(hashedPre):]) {
			return "", ErrNotKey
		}
		return "", ErrHashed
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(key)
	// The decoder skips '\r' and '\n'; re-encoding rejects every
	// non-canonical spelling at once.
	if err != nil || len(b) == 0 || len(b) > MaxReversible || Encode(string(b)) != key {
		return "", ErrNotKey
	}
	return string(b), nil
}

// IsLowerHex reports whether s is non-empty and all lowercase hex digits.
func IsLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}
