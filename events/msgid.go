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

// MsgID returns the deterministic identity of an outbound event, its
// Nats-Msg-Id and CloudEvents id, so that the same outcome published twice
// is stored once. It leaves out the source: which worker noticed does not
// change the outcome. It is "<event>-" and the hex SHA-256 of
// length-prefixed fields:
//
//   - card.drift: task id, pinned and live digest, sorted unique rule ids,
//     and the live card's signer key (thumbprint, else kid) when signed;
//   - card.pinned: task id, agent URL, digest, source, trigger source and id;
//   - card.observed: card URL, status, digest, ETag, fetchedAt;
//   - card.unreachable: card URL, task id, reason, and the trigger's source
//     and id, else attemptedAt;
//   - card.inconsistent: card URL and Episode (decoded: the digests and
//     their first sightings).
//
// For inbound data MsgID returns "" (publish.Publisher uses source/id).
func MsgID(d Data) string {
	if o, ok := d.(interface{ msgID() string }); ok {
		return o.msgID()
	}
	return ""
}

// idHash hashes length-prefixed fields, so no bytes move between fields.
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
		// Only when signed: unsigned drifts keep their old ids.
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
