package census

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// follower keeps what a census needs of every key of a KV bucket (or every
// subject of a stream): a full read first (the last message of each subject
// when lastPerSubject), then the messages written since the last refresh.
// put turns a message into what is kept, drop uncounts it. Deletes, purges
// and markers drop the key, and so does the stream dropping its last
// message (expire). Not safe for concurrent use.
type follower[V any] struct {
	js             jetstream.JetStream
	kv             jetstream.KeyValue // nil: a stream, named by stream and prefix
	name           string             // for errors: "pins bucket", "card stream"
	lastPerSubject bool
	seed           maphash.Seed
	put            func(jetstream.Msg) V
	drop           func(V)

	stream  string
	prefix  string // of the subjects followed: $KV.<bucket>. or card.observed.
	next    uint64 // next stream sequence to read; 0: read everything
	loaded  time.Time
	created time.Time // of the stream the entries were read from
	entries map[uint64]entry[V]
	queue   []queued // the entries' sequences in the order they were written

	loads, read, lastRead, dropped uint64
}

// entry is a key: the stream sequence of its last message and what put
// made of it.
type entry[V any] struct {
	seq uint64
	v   V
}

type queued struct{ seq, hash uint64 }

// newFollower follows the KV bucket kv.
func newFollower[V any](js jetstream.JetStream, kv jetstream.KeyValue, put func(jetstream.Msg) V, drop func(V)) *follower[V] {
	return &follower[V]{js: js, kv: kv, name: kv.Bucket() + " bucket", seed: maphash.MakeSeed(), put: put, drop: drop}
}

// newStreamFollower follows the last message of each subject prefix+">" of
// stream.
func newStreamFollower[V any](js jetstream.JetStream, stream, prefix string, put func(jetstream.Msg) V, drop func(V)) *follower[V] {
	return &follower[V]{js: js, stream: stream, prefix: prefix, name: stream + " stream", lastPerSubject: true,
		seed: maphash.MakeSeed(), put: put, drop: drop}
}

// refresh brings the entries up to date; reset is called before a full read
// (the first time, every resync > 0, or when the stream was made again or
// is behind). After an error the next refresh carries on (a gap: afresh).
func (f *follower[V]) refresh(ctx context.Context, resync time.Duration, now time.Time, reset func()) error {
	if f.stream == "" {
		st, err := f.kv.Status(ctx)
		if err != nil {
			return fmt.Errorf("census: %s: %w", f.name, err)
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok || bs.StreamInfo() == nil {
			return fmt.Errorf("census: %s: no stream behind it", f.name)
		}
		f.stream, f.prefix = bs.StreamInfo().Config.Name, "$KV."+f.kv.Bucket()+"."
	}
	stream, err := f.js.Stream(ctx, f.stream)
	if err != nil {
		return fmt.Errorf("census: %s: %w", f.name, err)
	}
	info := stream.CachedInfo()
	state := info.State
	if f.next == 0 || (resync > 0 && now.Sub(f.loaded) >= resync) ||
		!info.Created.Equal(f.created) || state.LastSeq+1 < f.next {
		f.next, f.loaded, f.created = 0, now, info.Created
		f.entries, f.queue = map[uint64]entry[V]{}, nil
		f.loads++
		reset()
	}
	read, err := f.pull(ctx, state.LastSeq)
	f.read += read
	f.lastRead = read
	if err != nil {
		if errors.Is(err, ErrTallyGap) {
			f.next = 0
		}
		return err
	}
	f.expire(state.FirstSeq)
	f.compact()
	return nil
}

// pull applies the messages from f.next up to at least last and returns
// how many it read.
func (f *follower[V]) pull(ctx context.Context, last uint64) (uint64, error) {
	if f.next > last {
		return 0, nil // nothing written since
	}
	cfg := jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, Replicas: 1,
		InactiveThreshold: time.Minute, FilterSubject: f.prefix + ">",
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	switch {
	case f.next > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, f.next
	case f.lastPerSubject:
		// The server delivers the last message of each subject in stream
		// order; what follows comes from the highest of them on.
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	}
	cons, err := f.js.CreateConsumer(ctx, f.stream, cfg)
	if err != nil {
		return 0, fmt.Errorf("census: read the %s: %w", f.name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = f.js.DeleteConsumer(dctx, f.stream, cons.CachedInfo().Name)
	}()
	// A batch holds two of the largest messages, at least 4 MiB.
	maxBytes := max(4<<20, 2*int(f.js.Conn().MaxPayload()))
	pending := cons.CachedInfo().NumPending
	var read, want uint64 = 0, 1 // want: the next consumer sequence
	for pending > 0 {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		batch, err := cons.Fetch(int(min(pending, 1000)), jetstream.FetchMaxBytes(maxBytes), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return read, fmt.Errorf("census: read the %s: %w", f.name, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			if md.Sequence.Consumer != want {
				cancel()
				return read, fmt.Errorf("census: %s: consumer sequence %d, want %d: %w", f.name, md.Sequence.Consumer, want, ErrTallyGap)
			}
			want++
			read++
			f.apply(m, md.Sequence.Stream)
			f.next, pending = md.Sequence.Stream+1, md.NumPending
		}
		err = batch.Error()
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoMessages) {
			return read, fmt.Errorf("census: read the %s: %w", f.name, err)
		}
		if n == 0 {
			// The next refresh carries on from here.
			return read, fmt.Errorf("census: read the %s: %d message(s) pending, none delivered: %w", f.name, pending, ErrTallyStalled)
		}
	}
	// Up to last is read, though its last messages may be gone.
	f.next = max(f.next, last+1)
	return read, nil
}

// apply takes one message: a put replaces its key's entry, a removal
// removes it.
func (f *follower[V]) apply(m jetstream.Msg, seq uint64) {
	subj := m.Subject()
	if len(subj) <= len(f.prefix) {
		return
	}
	h := maphash.String(f.seed, subj[len(f.prefix):])
	f.remove(h)
	if removal(m) {
		return
	}
	f.entries[h] = entry[V]{seq: seq, v: f.put(m)}
	f.queue = append(f.queue, queued{seq, h})
}

// removal reports whether m removes its key: a KV delete or purge, or a
// marker the server left for an expiry or a removal.
func removal(m jetstream.Msg) bool {
	hdr := m.Headers()
	if len(hdr) == 0 {
		return false
	}
	if op := hdr.Get("KV-Operation"); op != "" {
		return op == "DEL" || op == "PURGE"
	}
	return hdr.Get(jetstream.MarkerReasonHeader) != ""
}

func (f *follower[V]) remove(h uint64) {
	e, ok := f.entries[h]
	if !ok {
		return
	}
	delete(f.entries, h)
	f.drop(e.v)
}

// expire drops the keys whose last message is before first, the stream's
// first sequence.
func (f *follower[V]) expire(first uint64) {
	i := 0
	for ; i < len(f.queue) && f.queue[i].seq < first; i++ {
		q := f.queue[i]
		if e, ok := f.entries[q.hash]; ok && e.seq == q.seq {
			f.remove(q.hash)
			f.dropped++
		}
	}
	f.queue = f.queue[i:]
}

// compact drops the queue entries of superseded messages, keeping the
// queue under twice the keys.
func (f *follower[V]) compact() {
	if len(f.queue) <= 2*len(f.entries)+64 {
		return
	}
	q := make([]queued, 0, len(f.entries))
	for _, e := range f.queue {
		if s, ok := f.entries[e.hash]; ok && s.seq == e.seq {
			q = append(q, e)
		}
	}
	f.queue = q
}

// each calls fn with every entry, in stream order.
func (f *follower[V]) each(fn func(V)) {
	for _, q := range f.queue {
		if e, ok := f.entries[q.hash]; ok && e.seq == q.seq {
			fn(e.v)
		}
	}
}
