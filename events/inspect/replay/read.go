package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
)

// cardPrefix is the subject prefix of every card.* event.
var cardPrefix = strings.TrimSuffix(events.OutboundSubjects, ">")

// record is one decoded message with where the stream kept it.
type record struct {
	ev      events.Event
	stream  string
	seq     uint64
	stored  time.Time
	subject string
	// part is the partition token of a partitioned lifecycle stream's
	// subject ("" otherwise): each partition has its workers' consumer.
	part string
}

// Skipped is a stored message replay could not decode (it is left out of the
// timeline).
type Skipped struct {
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
}

// streamView is what a read needs to know about a stream at its start.
type streamView struct {
	name        string
	last        uint64
	partitioned bool // stored subjects carry a partition token
	lifecycle   bool // the lifecycle stream: subjects are checked against the data
	stream      jetstream.Stream
}

// views returns the lifecycle and card events streams as a read starts.
func (r *Reader) views(ctx context.Context) (life, card *streamView, err error) {
	if life, err = r.view(ctx, r.opts.Config.LifecycleStream); err != nil {
		return nil, nil, err
	}
	card, err = r.view(ctx, r.opts.Config.EventsStream)
	return life, card, err
}

func (r *Reader) view(ctx context.Context, name string) (*streamView, error) {
	s, err := r.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("replay: stream %s: %w", name, err)
	}
	info := s.CachedInfo()
	return &streamView{
		name: name, last: info.State.LastSeq, stream: s, lifecycle: name == r.opts.Config.LifecycleStream,
		partitioned: info.Config.SubjectTransform != nil && info.Config.SubjectTransform.Destination != "",
	}, nil
}

// lifecycleFilter returns the stored-subject filter of lifecycle events of
// kind ("*" for any) and task token ("*" for any).
func (r *Reader) lifecycleFilter(v *streamView, kind, taskToken string) string {
	s := strings.TrimSuffix(r.opts.Config.LifecycleSubjects, ">") + kind + "." + taskToken
	if v.partitioned {
		s += ".*"
	}
	return s
}

// window is the stored-time range that holds every event of q's window in a
// stream whose events are stored at most late after their time, which their
// publisher set up to ClockSkew ahead of the stream's clock.
func (r *Reader) window(q Query, late time.Duration) Range {
	var w Range
	if !q.Since.IsZero() {
		w.From = q.Since.Add(-r.opts.ClockSkew)
	}
	if !q.Until.IsZero() {
		w.To = q.Until.Add(late)
	}
	return w
}

// read reads the messages of v matching filters (nil: all) stored within w,
// with an ordered consumer, up to the stream's last sequence at the start of
// the read. Undecodable messages are returned as skipped; every delivered
// message counts in *read.
func (r *Reader) read(ctx context.Context, v *streamView, filters []string, w Range, read *int) ([]record, []Skipped, error) {
	sc, err := r.scan(ctx, v, filters, w.From, w.To, read)
	if err != nil {
		return nil, nil, err
	}
	defer sc.close()
	var recs []record
	var skipped []Skipped
	for {
		rec, skip, ok, err := sc.next(ctx)
		switch {
		case err != nil:
			return nil, nil, err
		case !ok:
			return recs, skipped, nil
		case skip != nil:
			skipped = append(skipped, *skip)
		default:
			recs = append(recs, rec)
		}
	}
}

// scanner is one ordered consumer over a stream, read a message at a time:
// from a stored time (or the beginning) to a stored time (or the end), never
// past the stream's last sequence at the start of the read.
type scanner struct {
	r    *Reader
	v    *streamView
	to   time.Time
	it   jetstream.MessagesContext
	done bool
	read *int
	// wanted, when set, says from a message's headers whether the read
	// can use it: one it cannot is counted and not decoded.
	wanted func(nats.Header) bool
}

// pullBatch is how many messages a scanner buffers.
const pullBatch = 256

// scan starts a scanner of v's messages matching filters (nil: all) stored
// from from to to (zero: open ends).
func (r *Reader) scan(ctx context.Context, v *streamView, filters []string, from, to time.Time, read *int) (*scanner, error) {
	sc := &scanner{r: r, v: v, to: to, read: read}
	if v.last == 0 {
		sc.done = true
		return sc, nil
	}
	occ := jetstream.OrderedConsumerConfig{
		FilterSubjects:    filters,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute,
	}
	if !from.IsZero() {
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	cons, err := v.stream.OrderedConsumer(ctx, occ)
	if err != nil {
		return nil, fmt.Errorf("replay: read %s: %w", v.name, err)
	}
	if ci := cons.CachedInfo(); ci != nil && ci.NumPending == 0 {
		sc.done = true
		return sc, nil
	}
	if sc.it, err = cons.Messages(jetstream.PullMaxMessages(pullBatch)); err != nil {
		return nil, fmt.Errorf("replay: read %s: %w", v.name, err)
	}
	return sc, nil
}

// close stops the scanner's consumer.
func (sc *scanner) close() {
	if sc.it != nil {
		sc.it.Stop()
		sc.it = nil
	}
}

// next returns the next message: a record, or (skip) one that did not
// decode; ok is false once the scan is over.
func (sc *scanner) next(ctx context.Context) (rec record, skip *Skipped, ok bool, err error) {
	for !sc.done {
		rec, skip, ok, err = sc.one(ctx)
		if ok || err != nil {
			return rec, skip, ok, err
		}
	}
	return record{}, nil, false, nil
}

// one reads one message: ok is false when it was past the scan's end or
// one the scan does not want (counted, not decoded).
func (sc *scanner) one(ctx context.Context) (rec record, skip *Skipped, ok bool, err error) {
	v := sc.v
	nctx, cancel := context.WithTimeout(ctx, sc.r.opts.IdleTimeout)
	msg, err := sc.it.Next(jetstream.NextContext(nctx))
	cancel()
	if err != nil {
		sc.done = true
		if ctx.Err() != nil {
			return record{}, nil, false, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return record{}, nil, false, fmt.Errorf("%w: %s delivered nothing for %s before sequence %d", ErrStalled, v.name, sc.r.opts.IdleTimeout, v.last)
		}
		return record{}, nil, false, fmt.Errorf("replay: read %s: %w", v.name, err)
	}
	md, err := msg.Metadata()
	if err != nil {
		sc.done = true
		return record{}, nil, false, fmt.Errorf("replay: read %s: %w", v.name, err)
	}
	if sc.read != nil {
		*sc.read++
	}
	seq := md.Sequence.Stream
	if seq > v.last || (!sc.to.IsZero() && md.Timestamp.After(sc.to)) {
		sc.done = true
		return record{}, nil, false, nil
	}
	if seq >= v.last || md.NumPending == 0 {
		sc.done = true
	}
	if sc.wanted != nil && !sc.wanted(msg.Headers()) {
		return record{}, nil, false, nil
	}
	ev, err := events.Decode(msg)
	if err == nil && v.lifecycle {
		// A publisher chose the subject: an event filed under another
		// task's (or kind's) subject is not that task's history.
		err = events.CheckStoredSubject(ev, msg.Subject(), strings.TrimSuffix(sc.r.opts.Config.LifecycleSubjects, ">"), v.partitioned)
	}
	if err != nil {
		return record{}, &Skipped{Stream: v.name, Seq: seq, Subject: msg.Subject(), Reason: err.Error()}, true, nil
	}
	rec = record{ev: ev, stream: v.name, seq: seq, stored: md.Timestamp.UTC(), subject: msg.Subject()}
	if v.lifecycle && v.partitioned {
		rec.part = rec.subject[strings.LastIndexByte(rec.subject, '.')+1:]
	}
	return rec, nil, true, nil
}

// filterBatch is how many subject filters one consumer carries when a read
// covers more tasks than that; fewer tasks get a consumer each, which the
// server serves from its subject index (faster, on the 400-agent demo store).
const filterBatch = 64

// readTasks reads the lifecycle events of kind ("*": any) of the tasks whose
// subject tokens are toks, stored within w, by subject.
func (r *Reader) readTasks(ctx context.Context, v *streamView, kind string, toks []string, w Range, read *int) ([]record, []Skipped, error) {
	var recs []record
	var skipped []Skipped
	batch := filterBatch
	if len(toks) <= filterBatch {
		batch = 1
	}
	for len(toks) > 0 {
		n := min(len(toks), batch)
		filters := make([]string, 0, n)
		for _, tok := range toks[:n] {
			filters = append(filters, r.lifecycleFilter(v, kind, tok))
		}
		toks = toks[n:]
		got, sk, err := r.read(ctx, v, filters, w, read)
		if err != nil {
			return nil, nil, err
		}
		recs, skipped = append(recs, got...), append(skipped, sk...)
	}
	return recs, skipped, nil
}

// taskToken returns the task token of a card.* subject
// (card.<event>.<agentKey>.<taskToken>), "" for an agent-level one.
func taskToken(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) < 4 {
		return ""
	}
	return parts[3]
}

// Range is a range of stored times; zero ends are open.
type Range struct{ From, To time.Time }

// Ranges returns the stored-time ranges of the two streams that Timeline
// and Stream read for q: what an offline copy of a store needs.
func Ranges(q Query, opts Options) (lifecycle, cardEvents Range) {
	r := &Reader{opts: opts.withDefaults()}
	lw, cw := r.window(q, r.opts.Latency), r.window(q, r.opts.FetchLatency)
	if q.TaskID != "" || cw.From.IsZero() {
		return lw, Range{To: cw.To}
	}
	// An agent's tasks and a window's opening state: the look-back.
	return lw, Range{From: cw.From.Add(-r.opts.LookBack), To: cw.To}
}
