// Package kvkey maps arbitrary ids to JetStream KV keys. It is its own
// package, free of NATS dependencies, so that its fuzz target runs at full
// speed; package store re-exports it as EncodeKey and DecodeKey.
package kvkey
