package store

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// MaxReversibleID is the longest id, in bytes, that EncodeKey stores
// reversibly. Longer ids are hashed so that a hostile id cannot produce a key
// longer than NATS accepts in a subject.
const MaxReversibleID = 512

// Key prefixes. The unpadded base64url alphabet ([A-Za-z0-9_-]) never
// contains '=', so keys that start with '=' are distinct from every
// reversible key.
const (
	emptyKey  = "="
	hashedPre = "=h"
)

// ErrHashedKey is returned by DecodeKey for a key that stores a hash of a
// long id rather than the id itself.
var ErrHashedKey = errors.New("store: key holds a hash of a long id")

// errBadKey is returned by DecodeKey for a string EncodeKey never produces.
var errBadKey = errors.New("store: not a key made by EncodeKey")

// EncodeKey maps any id (task id, card URL: any bytes, including dots,
// spaces, NATS wildcards and non-UTF-8) to a JetStream KV key. Keys use only
// [A-Za-z0-9_=-], never contain dots, and are at most 683 bytes long. The
// mapping is injective up to SHA-256 collisions:
//
//   - ""                          → "="
//   - up to MaxReversibleID bytes → unpadded base64url of the id
//   - longer ids                  → "=h" + hex SHA-256 of the id
func EncodeKey(id string) string {
	switch {
	case id == "":
		return emptyKey
	case len(id) > MaxReversibleID:
		sum := sha256.Sum256([]byte(id))
		return hashedPre + hex.EncodeToString(sum[:])
	}
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// DecodeKey inverts EncodeKey. It returns ErrHashedKey for the key of a long
// id, and an error for a string EncodeKey does not produce.
func DecodeKey(key string) (string, error) {
	switch {
	case key == emptyKey:
		return "", nil
	case len(key) == len(hashedPre)+2*sha256.Size && key[:len(hashedPre)] == hashedPre:
		if !isLowerHex(key[len(hashedPre):]) {
			return "", errBadKey
		}
		return "", ErrHashedKey
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(key)
	if err != nil || len(b) == 0 || len(b) > MaxReversibleID {
		return "", errBadKey
	}
	return string(b), nil
}

// isLowerHex reports whether s is non-empty and all lowercase hex digits.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}
