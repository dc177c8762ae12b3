package events

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"time"
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
// returns "": see Emitter, which uses source + "/" + a fresh UUID.
func MsgID(d Data) string {
	if o, ok := d.(interface{ msgID() string }); ok {
		return o.msgID()
	}
	return ""
}

type idHash struct{ h hash.Hash }

func newIDHash(typ string) idHash {
	h := idHash{sha256.New()}
	h.field(typ)
	return h
}

func (h idHash) field(s string) {
	var n [binary.MaxVarintLen64]byte
	h.h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	h.h.Write([]byte(s))
}

func (h idHash) sum(prefix string) string {
	return prefix + "-" + hex.EncodeToString(h.h.Sum(nil))
}

func (d Drift) msgID() string {
	rules := make([]string, 0, len(d.Findings))
	for _, f := range d.Findings {
		rules = append(rules, f.Rule)
	}
	slices.Sort(rules)
	rules = slices.Compact(rules)
	h := newIDHash(TypeDrift)
	h.field(d.TaskID)
	h.field(d.Pinned.Digest)
	h.field(d.Live.Digest)
	for _, r := range rules {
		h.field(r)
	}
	if s := d.Live.Signer; s != nil {
		// Only for signed cards: the ids of every other card.drift stay
		// what they were before carddrift recorded signers.
		h.field("signer")
		if s.Thumbprint != "" {
			h.field(s.Thumbprint)
		} else {
			h.field("kid:" + s.KeyID)
		}
	}
	return h.sum("drift")
}

func (d Pinned) msgID() string {
	h := newIDHash(TypePinned)
	h.field(d.TaskID)
	h.field(d.AgentURL)
	h.field(d.Digest)
	h.field(d.Source)
	h.field(d.Trigger.Source)
	h.field(d.Trigger.EventID)
	return h.sum("pinned")
}

func (d Observed) msgID() string {
	h := newIDHash(TypeObserved)
	h.field(d.CardURL)
	h.field(strconv.Itoa(d.Status))
	h.field(d.Digest)
	h.field(d.ETag)
	h.field(stamp(d.FetchedAt))
	return h.sum("observed")
}

func (d Unreachable) msgID() string {
	h := newIDHash(TypeUnreachable)
	h.field(d.CardURL)
	h.field(d.TaskID)
	h.field(d.Reason)
	if d.Trigger.EventID != "" {
		h.field("trigger")
		h.field(d.Trigger.Source)
		h.field(d.Trigger.EventID)
	} else {
		h.field("at")
		h.field(stamp(d.AttemptedAt))
	}
	return h.sum("unreachable")
}

func (d Inconsistent) msgID() string {
	h := newIDHash(TypeInconsistent)
	h.field(d.CardURL)
	if !d.Episode.IsZero() {
		h.field("episode")
		h.field(stamp(d.Episode))
	} else {
		h.field("digests")
		for _, s := range d.Digests {
			h.field(s.Digest)
			h.field(stamp(s.FirstSeen))
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
