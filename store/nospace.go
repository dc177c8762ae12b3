package store

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// nats-server's error codes of a write refused for lack of space, which
// nats.go does not name: JSInsufficientResourcesErr (the server's
// max_file_store or max_memory_store is used up, or its disk is full),
// JSAccountResourcesExceededErr (the account's storage limit) and
// JSStreamStoreFailedF, which carries the store's own error: at a stream's
// byte or message limit with DiscardNew, the server's ErrMaxBytes,
// ErrMaxMsgs or ErrMaxMsgsPerSubject text.
const (
	jsErrCodeInsufficientResources    jetstream.ErrorCode = 10023
	jsErrCodeAccountResourcesExceeded jetstream.ErrorCode = 10002
	jsErrCodeStreamStoreFailed        jetstream.ErrorCode = 10077
)

// The descriptions nats-server gives JSStreamStoreFailedF at a stream's
// limits (its store's ErrMaxBytes, ErrMaxMsgs, ErrMaxMsgsPerSubject). The
// same code carries other failures (a message too large, an I/O error),
// so only these texts say "full".
var streamFullDescriptions = []string{
	"maximum bytes exceeded",
	"maximum messages exceeded",
	"maximum messages per subject exceeded",
}

// NoSpace returns why a write (a publish, a KV put) failed for lack of
// space, or "" when err is not such a failure: the server's storage is
// used up ("server storage full"), the account's storage limit is reached
// ("account storage limit reached") or a stream that refuses new messages
// at its limit is at it ("stream at its limit"). Such a write succeeds once
// space returns: the caller keeps what it would write and tries again
// later, instead of giving up on it.
func NoSpace(err error) string {
	var apiErr *jetstream.APIError
	if err == nil || !errors.As(err, &apiErr) {
		return ""
	}
	switch apiErr.ErrorCode {
	case jsErrCodeInsufficientResources, jsErrCodeMemoryResourcesExceeded, jsErrCodeStorageResourcesExceeded:
		return "server storage full"
	case jsErrCodeAccountResourcesExceeded:
		return "account storage limit reached"
	case jsErrCodeStreamStoreFailed:
		for _, d := range streamFullDescriptions {
			if strings.EqualFold(apiErr.Description, d) {
				return "stream at its limit"
			}
		}
	}
	return ""
}
