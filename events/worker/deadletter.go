package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetterReason says why an event was dead-lettered: the last token of
// its dead-letter subject (<DLQ prefix>.<reason>), the
// Carddrift-Dead-Letter-Reason header of the copy and the reason label of
// carddrift_dead_letters_total. DeadLetterReasons lists them all.
type DeadLetterReason string

// The dead-letter reasons: the one vocabulary of them.
const (
	// ReasonMalformed: the message is not a CloudEvent carddrift can read
	// (events.Decode failed: envelope, unknown type, schema violation).
	ReasonMalformed DeadLetterReason = "malformed"
	// ReasonSubjectMismatch: the subject names another kind than the
	// event's type, or another task than its data (events.CheckSubject).
	// The event changes no pin.
	ReasonSubjectMismatch DeadLetterReason = "subject-mismatch"
	// ReasonUnexpectedType: an outbound (card.*) event on the lifecycle
	// stream.
	ReasonUnexpectedType DeadLetterReason = "unexpected-type"
	// ReasonInvalidCard: a submission whose client card cannot be pinned.
	ReasonInvalidCard DeadLetterReason = "invalid-card"
	// ReasonCorruptCard: a stored card body that no longer parses.
	ReasonCorruptCard DeadLetterReason = "corrupt-card"
	// ReasonMaxDeliver: the event kept failing (store or publish errors)
	// for store.Config.MaxDeliver deliveries (carddrift serve
	// --max-deliver).
	ReasonMaxDeliver DeadLetterReason = "max-deliver"
)

// DeadLetterReasons returns every dead-letter reason, in a fixed order.
func DeadLetterReasons() []DeadLetterReason {
	return []DeadLetterReason{ReasonMalformed, ReasonSubjectMismatch, ReasonUnexpectedType,
		ReasonInvalidCard, ReasonCorruptCard, ReasonMaxDeliver}
}

// Headers of a dead-letter copy. The copy keeps the publisher's other
// headers as they were, except those carddrift or the server would read as
// their own, which it keeps under PublisherHeaderPrefix.
const (
	HeaderDeadLetterReason = "Carddrift-Dead-Letter-Reason" // a DeadLetterReason
	HeaderError            = "Carddrift-Error"              // what failed, at most 1 KiB
	HeaderOriginalSubject  = "Carddrift-Original-Subject"   // the event's subject as stored
	HeaderStreamSequence   = "Carddrift-Stream-Sequence"    // its lifecycle stream sequence
	HeaderDataTruncated    = "Carddrift-Data-Truncated"     // the original size, when the copy's data is cut
	// PublisherHeaderPrefix prefixes the publisher's headers that steer
	// the server (every "Nats-" header: Nats-Expected-*, Nats-Msg-Id,
	// Nats-TTL, Nats-Rollup, Nats-Batch-*, Nats-Schedule*, Nats-Trace-*, …)
	// or look like carddrift's ("Carddrift-"): the copy carries
	// "Carddrift-Publisher-Nats-Expected-Stream", never
	// "Nats-Expected-Stream", so that no publisher decides where, whether
	// or for how long its dead letter is stored.
	PublisherHeaderPrefix = "Carddrift-Publisher-"
)

// maxErrorHeader bounds the Carddrift-Error header.
const maxErrorHeader = 1024

// original is what a dead letter copies of the event it stands for.
type original struct {
	subject string      // as stored
	header  nats.Header // the publisher's
	data    []byte
	stream  string // "" when unknown
	seq     uint64 // its stream sequence, 0 when unknown
}

// originalOf reads msg as a dead letter copies it.
func originalOf(msg jetstream.Msg) original {
	o := original{subject: msg.Subject(), header: msg.Headers(), data: msg.Data()}
	if md, err := msg.Metadata(); err == nil {
		o.stream, o.seq = md.Stream, md.Sequence.Stream
	}
	return o
}

// deadLetterMsg builds the dead-letter copy of o, on subject: its data and
// the publisher's headers (renamed when they steer JetStream or claim to
// be carddrift's, see steers), carddrift's headers, and a Nats-Msg-Id of
// the event's stream position, so that dead-lettering the same event twice
// (a redelivery after a lost termination) stores one copy. The copy fits
// in maxPayload bytes (headers included; 0: no bound): the publisher's
// headers are dropped, then the data cut, when they would not
// (HeaderDataTruncated says the original size).
func deadLetterMsg(subject string, o original, reason DeadLetterReason, cause error, maxPayload int64) *nats.Msg {
	dl := nats.NewMsg(subject)
	publisher := nats.Header{}
	for k, v := range o.header {
		if steers(k) {
			publisher[PublisherHeaderPrefix+k] = v
		} else {
			publisher[k] = v
		}
	}
	own := nats.Header{}
	own.Set(HeaderDeadLetterReason, string(reason))
	own.Set(HeaderError, strings.ToValidUTF8(truncate(cause.Error(), maxErrorHeader), "?"))
	own.Set(HeaderOriginalSubject, o.subject)
	if o.stream != "" {
		own.Set(HeaderStreamSequence, fmt.Sprint(o.seq))
		own.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", o.stream, o.seq))
	}
	data := o.data
	if maxPayload > 0 {
		// Room for the data beside carddrift's headers, one of them
		// possibly HeaderDataTruncated.
		room := maxPayload - headerSize(own) - int64(len(HeaderDataTruncated)+len(": \r\n")+20)
		if headerSize(publisher)+int64(len(data)) > room {
			publisher = nil
		}
		if int64(len(data)) > room {
			own.Set(HeaderDataTruncated, fmt.Sprint(len(data)))
			data = data[:max(room, 0)]
		}
	}
	for k, v := range publisher {
		dl.Header[k] = v
	}
	for k, v := range own {
		dl.Header[k] = v
	}
	dl.Data = data
	return dl
}

// steers reports whether the server or carddrift would read header k of a
// publisher's message as an instruction or as carddrift's own: "Nats-" and
// "Carddrift-" headers, in any case.
func steers(k string) bool {
	return hasPrefixFold(k, "Nats-") || hasPrefixFold(k, "Carddrift-")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// headerSize is how many bytes h takes on the wire, beyond the status line.
func headerSize(h nats.Header) int64 {
	n := int64(len("NATS/1.0\r\n\r\n"))
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// deadLetter copies msg to the dead-letter stream with the reason and,
// once the stream has stored the copy (its publish acknowledgement), ends
// msg with a termination so that it is never redelivered. If the copy is
// not stored, msg is not acknowledged: it is NAKed with the growing delay
// of redelivery and dead-lettered on a later delivery. The consumer's own
// MaxDeliver is unlimited (store.Config.LifecycleConsumer), so the server
// never drops an event the worker could not dead-letter. It reports
// whether the copy was stored.
func (w *Worker) deadLetter(ctx context.Context, msg jetstream.Msg, reason DeadLetterReason, cause error) bool {
	dl := deadLetterMsg(w.dlqPrefix()+"."+string(reason), originalOf(msg), reason, cause, w.js.Conn().MaxPayload())
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := w.js.PublishMsg(pctx, dl); err != nil {
		// Without a dead-letter copy, terminating would lose the event: let it
		// be redelivered instead.
		delay := redeliveryDelay(msg)
		w.log.Error().Err(err).Str("reason", string(reason)).Str("subject", msg.Subject()).Dur("retryIn", delay).
			Msg("dead-letter publish failed; event left unacknowledged for redelivery")
		if nerr := msg.NakWithDelay(delay); nerr != nil {
			w.log.Warn().Err(nerr).Msg("nak failed; the event will be redelivered after the ack wait")
		}
		return false
	}
	w.m.deadLetter(string(reason))
	w.log.Warn().Str("reason", string(reason)).Err(cause).Str("subject", msg.Subject()).Msg("event dead-lettered")
	if err := msg.TermWithReason(string(reason)); err != nil {
		// Redelivered, it is dead-lettered again: the copy's Nats-Msg-Id
		// keeps one copy within the stream's duplicate window.
		w.log.Warn().Err(err).Msg("termination failed; the event will be redelivered")
	}
	return true
}

// redeliveryDelay is how long a NAKed event waits before its next
// delivery: 2^deliveries seconds, at most a minute (1s when unknown).
func redeliveryDelay(msg jetstream.Msg) time.Duration {
	md, err := msg.Metadata()
	if err != nil || md == nil {
		return time.Second
	}
	return growingDelay(md.NumDelivered)
}

// growingDelay is 2^delivered seconds, at most a minute.
func growingDelay(delivered uint64) time.Duration {
	return min(time.Second<<min(delivered, 6), time.Minute)
}

func (w *Worker) dlqPrefix() string {
	s := w.cfg.DLQSubjects
	if len(s) > 2 && s[len(s)-2:] == ".>" {
		return s[:len(s)-2]
	}
	return "carddrift.dlq"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
