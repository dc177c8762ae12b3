package store

import "github.com/carddrift/carddrift/store/internal/kvkey"

// MaxReversibleID is the longest id, in bytes, that EncodeKey stores
// reversibly. Longer ids are hashed so that a hostile id cannot produce a key
// longer than NATS accepts in a subject.
const MaxReversibleID = 512

// ErrHashedKey is returned by DecodeKey for a key that stores a hash of a
// long id rather than the id itself.
var ErrHashedKey = kvkey.ErrHashed

// EncodeKey maps any id (task id, card URL: any bytes, including dots,
// spaces, NATS wildcards and non-UTF-8) to a JetStream KV key. Keys use only
// [A-Za-z0-9_=-], never contain dots, and are at most 683 bytes long. The
// mapping is injective up to SHA-256 collisions:
//
//   - ""                          → "="
//   - up to MaxReversibleID bytes → unpadded base64url of the id
//   - longer ids                  → "=h" + hex SHA-256 of the id
func EncodeKey(id string) string { return kvkey.Encode(id) }

// DecodeKey inverts EncodeKey. It returns ErrHashedKey for the key of a long
// id, and an error for a string EncodeKey does not produce.
func DecodeKey(key string) (string, error) { return kvkey.Decode(key) }
