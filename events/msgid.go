package events

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// MsgID returns the deterministic identity of an outbound event: its
// JetStream Nats-Msg-Id and its CloudEvents id. Two workers (or one worker
// retrying after a crash or a redelivery) that publish the same outcome
// produce the same id, and the stream's duplicate window drops the second
// copy. The id does not include the CloudEvents source (the worker name) on
// purpose: which worker noticed does not change the outcome.
//
// The id is "<event>-" followed by the hex SHA-256 over the length-prefixed
// fields below (so that no two field lists collide):
//
//   - card.drift: task id, pinned digest, live digest, and the sorted set of
//     unique finding rule ids; when the live card is signed, also its
//     signer's key (thumbprint, else kid). A new finding on the same cards
//     (for example blind-retry on a later retry) is a new event, and so is
//     a card re-signed by yet another key (signatures never change a
//     digest); the same findings seen again are not, whatever triggered
//     them.
//   - card.pinned: task id, agent URL, digest, pin source, and the trigger's
//     source and event id. A re-submission (a new a2a.task.submitted) records
//     a new pin even when the digest is unchanged; a redelivered submission
//     does not.
//   - card.observed: card URL, status, digest, ETag and fetchedAt (UTC,
//     nanoseconds). Each observation is its own event.
//   - card.unreachable: card URL, task id, reason, and either the trigger's
//     source and event id (when the fetch had a trigger: redeliveries of the
//     trigger collapse) or attemptedAt (when it had none).
//   - card.inconsistent: card URL and the episode's start (Episode, UTC,
//     nanoseconds): one event per episode, whichever worker saw it start
//     and however often it is published again. Without an Episode (a
//     decoded event), the digests and their first sightings stand in.
//
// For inbound data (a2a.task.*), whose ids are chosen by the client, MsgID
// returns "": see publish.Publisher, which uses source + "/" + the id (for
// client.Emitter a fresh UUID).
func MsgID(d Data) string {
	if o, ok := d.(interface{ msgID() string }); ok {
		return o.msgID()
	}
	return ""
}

// idHash hashes the identity of an outbound event: its type, then fields,
// each length-prefixed so that no bytes can move from one field to the next.
type idHash struct{ h hash.Hash }

func newIDHash(typ string, fields ...string) idHash {
	h := idHash{sha256.New()}
	h.add(typ)
	h.add(fields...)
	return h
}

func (h idHash) add(fields ...string) {
	var n [binary.MaxVarintLen64]byte
	for _, s := range fields {
		h.h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.h.Write([]byte(s))
	}
}

func (h idHash) sum(prefix string) string {
	return prefix + "-" + hex.EncodeToString(h.h.Sum(nil))
}

func (d Drift) msgID() string {
	rules := detector.RuleIDs(d.Findings)
	slices.Sort(rules)
	h := newIDHash(TypeDrift, d.TaskID, d.Pinned.Digest, d.Live.Digest)
	h.add(rules...)
	if s := d.Live.Signer; s != nil {
		// Only for signed cards: the ids of every other card.drift stay
		// what they were before carddrift recorded signers.
		if s.Thumbprint != "" {
			h.add("signer", s.Thumbprint)
		} else {
			h.add("signer", "kid:"+s.KeyID)
		}
	}
	return h.sum("drift")
}

func (d Pinned) msgID() string {
	h := newIDHash(TypePinned, d.TaskID, d.AgentURL, d.Digest, d.Source, d.Trigger.Source, d.Trigger.EventID)
	return h.sum("pinned")
}

func (d Observed) msgID() string {
	h := newIDHash(TypeObserved, d.CardURL, strconv.Itoa(d.Status), d.Digest, d.ETag, stamp(d.FetchedAt))
	return h.sum("observed")
}

func (d Unreachable) msgID() string {
	h := newIDHash(TypeUnreachable, d.CardURL, d.TaskID, d.Reason)
	if d.Trigger.EventID != "" {
		h.add("trigger", d.Trigger.Source, d.Trigger.EventID)
	} else {
		h.add("at", stamp(d.AttemptedAt))
	}
	return h.sum("unreachable")
}

func (d Inconsistent) msgID() string {
	h := newIDHash(TypeInconsistent, d.CardURL)
	if !d.Episode.IsZero() {
		h.add("episode", stamp(d.Episode))
	} else {
		h.add("digests")
		for _, s := range d.Digests {
			h.add(s.Digest, stamp(s.FirstSeen))
		}
	}
	return h.sum("inconsistent")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
