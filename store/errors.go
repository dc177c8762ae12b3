package store

import (
	"errors"

	"github.com/carddrift/carddrift/store/topology"
)

// Errors returned by every store implementation. Implementations convert their
// backend's errors to these at the package edge; callers test with errors.Is.
var (
	// ErrNotFound is returned by Get when the key does not exist, was deleted
	// or expired, and by Update when the key no longer exists.
	ErrNotFound = errors.New("store: not found")
	// ErrExists is returned by Create when the key already exists.
	ErrExists = errors.New("store: already exists")
	// ErrConflict is returned by Update when the revision given is not the
	// current one (someone else wrote first). Re-read and retry.
	ErrConflict = errors.New("store: revision conflict")
	// ErrInvalidDigest is returned by Cards.Put and Cards.Get when the digest is
	// not "sha256:" followed by 64 lowercase hex digits.
	ErrInvalidDigest = errors.New("store: invalid card digest")
	// ErrWatchClosed is returned by LeaseFeed.Next (and a bucket scan) once
	// the feed behind it was stopped or its connection closed.
	ErrWatchClosed = errors.New("store: watch closed")
	// ErrInvalidID is returned by Create and Update when the task id or card
	// URL is not valid UTF-8 (which the JSON values are stored as cannot hold).
	ErrInvalidID = errors.New("store: id is not valid UTF-8")
	// ErrCorrupt is returned by Get when a stored value cannot be decoded or does
	// not belong to the key it is stored under.
	ErrCorrupt = errors.New("store: corrupt value")
	// ErrStorageExceeded is returned (wrapped with the server's error) by
	// Provision and Open when the server refuses to reserve the byte limits
	// (Config.StorageLimit: more than its storage has left, or than the
	// account may use). Lower StorageLimit or raise the server's.
	ErrStorageExceeded = errors.New("store: byte limits exceed the server's storage")
)

// ConfigError reports an invalid Config field. Validate returns it (wrapped:
// "store: invalid config <Field>=<Value>: <Reason>"); test with errors.As.
// It is the topology's error type, topology.ConfigError: a Config's fields
// are the Topology's and the buckets', one concept.
type ConfigError = topology.ConfigError
