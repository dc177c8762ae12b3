package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
)

// clockSkew widens the stored-time bounds of a windowed read: an entry's time
// is its event's time (set by the client or the worker), which may precede
// the moment the stream stored it.
const clockSkew = time.Minute

// cardPrefix is the subject prefix of every card.* event.
var cardPrefix = strings.TrimSuffix(events.OutboundSubjects, ">")

// record is one decoded message with where the stream kept it.
type record struct {
	ev      events.Event
	stream  string
	seq     uint64
	stored  time.Time
	subject string
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

func (r *Reader) view(ctx context.Context, name string) (*streamView, error) {
	s, err := r.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("replay: stream %s: %w", name, err)
	}
	info := s.CachedInfo()
	return &streamView{
		name: name, last: info.State.LastSeq, stream: s, lifecycle: name == r.cfg.LifecycleStream,
		partitioned: info.Config.SubjectTransform != nil && info.Config.SubjectTransform.Destination != "",
	}, nil
}

// lifecycleFilter returns the stored-subject filter of lifecycle events of
// kind ("*" for any) and task token ("*" for any).
func (r *Reader) lifecycleFilter(v *streamView, kind, taskToken string) string {
	s := strings.TrimSuffix(r.cfg.LifecycleSubjects, ">") + kind + "." + taskToken
	if v.partitioned {
		s += ".*"
	}
	return s
}

// readWindow is the stored-time range a read covers; zero ends are open.
type readWindow struct{ from, to time.Time }

func (q Query) readWindow() readWindow {
	var w readWindow
	if !q.Since.IsZero() {
		w.from = q.Since.Add(-clockSkew)
	}
	if !q.Until.IsZero() {
		w.to = q.Until.Add(clockSkew)
	}
	return w
}

// read reads the messages of v matching filters (nil: all) stored within w,
// with an ordered consumer, up to the stream's last sequence at the start of
// the read. Undecodable messages are returned as skipped.
func (r *Reader) read(ctx context.Context, v *streamView, filters []string, w readWindow) ([]record, []Skipped, error) {
	if v.last == 0 {
		return nil, nil, nil
	}
	occ := jetstream.OrderedConsumerConfig{
		FilterSubjects:    filters,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute,
	}
	if !w.from.IsZero() {
		from := w.from
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	cons, err := v.stream.OrderedConsumer(ctx, occ)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: read %s: %w", v.name, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, nil, fmt.Errorf("replay: read %s: %w", v.name, err)
	}
	defer it.Stop()
	if ci := cons.CachedInfo(); ci != nil && ci.NumPending == 0 {
		return nil, nil, nil
	}
	var recs []record
	var skipped []Skipped
	for {
		nctx, cancel := context.WithTimeout(ctx, r.idle)
		msg, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, nil, fmt.Errorf("%w: %s delivered nothing for %s before sequence %d", ErrStalled, v.name, r.idle, v.last)
			}
			return nil, nil, fmt.Errorf("replay: read %s: %w", v.name, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return nil, nil, fmt.Errorf("replay: read %s: %w", v.name, err)
		}
		seq := md.Sequence.Stream
		if seq > v.last || (!w.to.IsZero() && md.Timestamp.After(w.to)) {
			return recs, skipped, nil
		}
		ev, err := events.Decode(msg)
		if err == nil && v.lifecycle {
			// A publisher chose the subject: an event filed under another
			// task's (or kind's) subject is not that task's history.
			err = events.CheckStoredSubject(ev, msg.Subject(), strings.TrimSuffix(r.cfg.LifecycleSubjects, ">"), v.partitioned)
		}
		if err != nil {
			skipped = append(skipped, Skipped{Stream: v.name, Seq: seq, Subject: msg.Subject(), Reason: err.Error()})
		} else {
			recs = append(recs, record{ev: ev, stream: v.name, seq: seq, stored: md.Timestamp.UTC(), subject: msg.Subject()})
		}
		if seq >= v.last || md.NumPending == 0 {
			return recs, skipped, nil
		}
	}
}
