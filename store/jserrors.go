package store

// What a failed JetStream request means: a deployment still forming
// (Waiting), a write refused for lack of space (NoSpace), and the
// nats-server error codes nats.go does not name that tell them.

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// nats-server's JSStorageResourcesExceededErr, JSMemoryResourcesExceededErr
// and JSMessageTTLDisabledErr, which nats.go does not name.
const (
	jsErrCodeStorageResourcesExceeded jetstream.ErrorCode = 10047
	jsErrCodeMemoryResourcesExceeded  jetstream.ErrorCode = 10028
	jsErrCodeMessageTTLDisabled       jetstream.ErrorCode = 10166
)

// nats-server's error codes of a deployment still forming (or failing
// over), which nats.go does not name: JSClusterNoPeersErrF ("no suitable
// peers for placement"), JSClusterNotAvailErr, JSClusterNotLeaderErr,
// JSStreamOfflineErr and JSStreamOfflineReasonErrF.
const (
	jsErrCodeClusterNoPeers       jetstream.ErrorCode = 10005
	jsErrCodeClusterNotAvailable  jetstream.ErrorCode = 10008
	jsErrCodeClusterNotLeader     jetstream.ErrorCode = 10009
	jsErrCodeStreamOffline        jetstream.ErrorCode = 10118
	jsErrCodeStreamOfflineReasonF jetstream.ErrorCode = 10194
)

// errStreamForming marks a stream that was created, or found being
// created by another worker, and that its info request does not find yet.
var errStreamForming = errors.New("stream created but not found yet")

// Waiting returns what a failed JetStream request (Provision, Bind, a
// consumer's creation) waits for when its error is one that a deployment
// still forming returns and that goes away by itself (the cases below), and
// "" for any other error, which waiting does not cure: a refused
// permission, a conflicting or invalid configuration, limits the server
// cannot reserve (ErrStorageExceeded), a cancelled context. A deadline
// counts as no answer: the caller tells its own overall deadline apart from
// one attempt's.
func Waiting(err error) string {
	var apiErr *jetstream.APIError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, ErrStorageExceeded):
		return ""
	case errors.Is(err, errStreamForming):
		return "a stream being created to be found (two workers provisioning at once, a cluster placing its replicas)"
	case errors.As(err, &apiErr):
		switch apiErr.ErrorCode {
		case jsErrCodeClusterNoPeers:
			return "too few JetStream servers up to place the replicas (no suitable peers for placement)"
		case jsErrCodeClusterNotAvailable, jsErrCodeClusterNotLeader:
			return "a JetStream meta leader (the cluster is electing one)"
		case jsErrCodeStreamOffline, jsErrCodeStreamOfflineReasonF:
			return "a stream that is offline to come back"
		case jetstream.JSErrCodeJetStreamNotEnabled:
			return "JetStream to be enabled on the server"
		}
		return ""
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return "JetStream to answer (no responders: not enabled yet or no leader)"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "JetStream to answer (timed out)"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, nats.ErrNoServers),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected):
		return "a NATS server to connect to"
	}
	return ""
}

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
