package census

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
)

// DefaultResync is how often a Tally reads the whole pins bucket again by
// default, whatever the changes said: the bound on how long a removal the
// bucket's stream does not announce (an operator's message delete) can
// leave a pin counted.
const DefaultResync = 15 * time.Minute

// ErrTallyGap is wrapped by Tally.Refresh when the consumer's sequence
// skipped a message: the counts are read again from scratch at the next
// Refresh.
var ErrTallyGap = errors.New("census: the pins bucket's changes arrived with a gap")

// Tally counts the tasks pinned per agent and card version, kept up to date
// from the pins bucket's stream: the first Refresh reads every pin, each
// later one only what was written since the last (puts, deletes, purges
// and the markers of TTL expiries; a re-pin to another agent or card moves
// its count). A census taken with a Tally (Source.Tally) therefore costs
// O(changes) of pin reads, not O(pins).
//
// Removals the stream does not announce are found too: a pin whose last
// message the bucket dropped for a limit (a byte limit, an age without
// expiry markers) is uncounted at the next Refresh, from the stream's
// first sequence; anything else (a message deleted by hand) is corrected by
// the full read every Resync.
//
// Memory: per pin, a map entry (a 64-bit hash of its key, the sequence of
// its last message, its group) and one or two 16-byte queue entries; per
// (agent, card version) its host, agent URL, digest and count, and per
// digest its card version: about 130 bytes per pin in all with 10 pins per
// agent (BenchmarkTake's tally-B/pin), bounded by the pins bucket, whose
// records are larger. The key
// hash is seeded per Tally, so a publisher cannot aim two task ids at one
// slot; an accidental collision (p ≈ n²/2⁶⁵) miscounts one pin until the
// next full read.
//
// Safe for concurrent use; Refresh calls are serialized. The zero value is
// not usable: call NewTally.
type Tally struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	resync time.Duration
	now    func() time.Time
	seed   maphash.Seed

	mu      sync.Mutex
	stream  string
	prefix  string // "$KV.<bucket>."
	next    uint64 // next stream sequence to read; 0: read everything
	loaded  time.Time
	created time.Time // of the stream the counts were read from
	slots   map[uint64]slot
	groups  map[groupKey]*group
	queue   []queued // the slots' sequences in the order they were written
	corrupt int
	// undecodable is the group of the values that are not pins (never in
	// groups, never counted in a census).
	undecodable group
	// versions memoizes the card version of the digests the groups hold
	// (a body never changes under its digest): a census reads and parses
	// the body of a pinned card once, not at every census.
	versions map[string]*version
	stats    TallyStats
}

// version is a digest's card version (known once a census read the body;
// checked: when a census last found no body) and how many groups hold the
// digest.
type version struct {
	v       string
	known   bool
	checked time.Time
	refs    int
}

// bodyRetry is how long a census trusts that carddrift has no body for a
// pinned digest (a pin by digest alone) before it looks again.
const bodyRetry = time.Minute

// TallyOptions adjust a Tally.
type TallyOptions struct {
	// Resync is how often the whole bucket is read again (default
	// DefaultResync; negative: never, beyond the first Refresh and gaps).
	Resync time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// TallyStats counts what a Tally read: for metrics and tests.
type TallyStats struct {
	// Loads counts the full reads of the bucket (the first Refresh, gaps,
	// Resync).
	Loads uint64
	// Refreshes counts the Refresh calls that succeeded.
	Refreshes uint64
	// Read counts the bucket's messages read in all, LastRead those of the
	// last Refresh.
	Read, LastRead uint64
	// Dropped counts the pins uncounted because the bucket dropped their
	// last message without a marker (a limit).
	Dropped uint64
	// Pins is the number of pins counted now, Groups of (agent, card
	// version) pairs.
	Pins, Groups int
}

type groupKey struct{ host, digest string }

// group is the pins of one agent host on one digest. agentURL is the agent
// URL of a pin of the group (the census names an agent seen only through
// its pins after it).
type group struct {
	key      groupKey
	agentURL string
	n        int
}

// slot is a pin: the stream sequence of its last message and its group
// (nil when it is not counted, an agent URL without a host; the Tally's
// undecodable group for a value that is not a pin).
type slot struct {
	seq uint64
	g   *group
}

type queued struct{ seq, hash uint64 }

// NewTally returns a Tally over the pins bucket kv (store.KVPins.KV) of the
// JetStream context js. It does no I/O.
func NewTally(js jetstream.JetStream, kv jetstream.KeyValue, opts TallyOptions) *Tally {
	if opts.Resync == 0 {
		opts.Resync = DefaultResync
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tally{js: js, kv: kv, resync: opts.Resync, now: opts.Now, seed: maphash.MakeSeed()}
}

// Refresh brings the counts up to date: everything at the first call (and
// after a gap, once Resync has passed, or when the bucket was made again),
// otherwise the bucket's messages written since the last call. On an error
// the next Refresh carries on from what was read.
func (t *Tally) Refresh(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stream == "" {
		st, err := t.kv.Status(ctx)
		if err != nil {
			return fmt.Errorf("census: pins bucket: %w", err)
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok || bs.StreamInfo() == nil {
			return fmt.Errorf("census: pins bucket %s: no stream behind it", t.kv.Bucket())
		}
		t.stream, t.prefix = bs.StreamInfo().Config.Name, "$KV."+t.kv.Bucket()+"."
	}
	stream, err := t.js.Stream(ctx, t.stream)
	if err != nil {
		return fmt.Errorf("census: pins bucket: %w", err)
	}
	info := stream.CachedInfo()
	state := info.State
	// Read from scratch the first time, every Resync, and when the stream
	// is another (the bucket was deleted and made again) or behind what was
	// read.
	if t.next == 0 || (t.resync > 0 && t.now().Sub(t.loaded) >= t.resync) ||
		!info.Created.Equal(t.created) || state.LastSeq+1 < t.next {
		t.reset()
		t.created = info.Created
	}
	read, err := t.pull(ctx, state.LastSeq)
	t.stats.Read += read
	t.stats.LastRead = read
	if err != nil {
		if errors.Is(err, ErrTallyGap) {
			t.next = 0
		}
		return err
	}
	t.expire(state.FirstSeq)
	t.compact()
	t.stats.Refreshes++
	return nil
}

// reset forgets every count, so that the next pull reads the whole bucket.
func (t *Tally) reset() {
	t.next, t.loaded = 0, t.now()
	t.slots, t.groups, t.queue, t.corrupt = map[uint64]slot{}, map[groupKey]*group{}, nil, 0
	t.versions = map[string]*version{}
	t.stats.Loads++
}

// pull applies the bucket's messages from t.next on, up to at least last
// (the stream's last sequence when the Refresh began), and returns how many
// it read.
func (t *Tally) pull(ctx context.Context, last uint64) (uint64, error) {
	if t.next > last {
		return 0, nil // nothing written since
	}
	cfg := jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, Replicas: 1,
		InactiveThreshold: time.Minute, FilterSubject: t.prefix + ">",
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if t.next > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, t.next
	}
	cons, err := t.js.CreateConsumer(ctx, t.stream, cfg)
	if err != nil {
		return 0, fmt.Errorf("census: read the pins bucket: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = t.js.DeleteConsumer(dctx, t.stream, cons.CachedInfo().Name)
	}()
	// A batch holds at most maxBytes: two of the largest messages the
	// server accepts, at least 4 MiB.
	maxBytes := max(4<<20, 2*int(t.js.Conn().MaxPayload()))
	pending := cons.CachedInfo().NumPending
	var read, want uint64 = 0, 1 // want: the next consumer sequence
	for pending > 0 {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		batch, err := cons.Fetch(int(min(pending, 1000)), jetstream.FetchMaxBytes(maxBytes), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return read, fmt.Errorf("census: read the pins bucket: %w", err)
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
				return read, fmt.Errorf("census: consumer sequence %d, want %d: %w", md.Sequence.Consumer, want, ErrTallyGap)
			}
			want++
			read++
			t.apply(m, md.Sequence.Stream)
			t.next, pending = md.Sequence.Stream+1, md.NumPending
		}
		err = batch.Error()
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoMessages) {
			return read, fmt.Errorf("census: read the pins bucket: %w", err)
		}
		if n == 0 {
			// The rest was removed meanwhile (superseded, expired): what is
			// left is read at the next Refresh.
			return read, nil
		}
	}
	// Everything up to the last sequence at the start is read (the
	// consumer had nothing pending): a bucket whose last messages were
	// removed does not make the next Refresh read from scratch.
	t.next = max(t.next, last+1)
	return read, nil
}

// apply counts one message of the bucket: a put moves its pin to the
// pin's group, a delete, purge or expiry marker removes it.
func (t *Tally) apply(m jetstream.Msg, seq uint64) {
	subj := m.Subject()
	if len(subj) <= len(t.prefix) {
		return
	}
	h := maphash.String(t.seed, subj[len(t.prefix):])
	t.remove(h)
	if removal(m) {
		return
	}
	s := slot{seq: seq}
	var p task.Pin
	if err := json.Unmarshal(m.Data(), &p); err != nil {
		s.g = &t.undecodable
		t.corrupt++
	} else if host, err := events.AgentHost(p.AgentURL); err == nil {
		k := groupKey{host, p.Digest}
		g := t.groups[k]
		if g == nil {
			g = &group{key: k, agentURL: p.AgentURL}
			t.groups[k] = g
			v := t.versions[k.digest]
			if v == nil {
				v = &version{}
				t.versions[k.digest] = v
			}
			v.refs++
		}
		g.n++
		s.g = g
	}
	t.slots[h] = s
	t.queue = append(t.queue, queued{seq, h})
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

// remove uncounts the pin of key hash h, if it is counted.
func (t *Tally) remove(h uint64) {
	s, ok := t.slots[h]
	if !ok {
		return
	}
	delete(t.slots, h)
	if s.g == &t.undecodable {
		t.corrupt--
		return
	}
	if g := s.g; g != nil {
		if g.n--; g.n == 0 {
			delete(t.groups, g.key)
			if v := t.versions[g.key.digest]; v != nil {
				if v.refs--; v.refs == 0 {
					delete(t.versions, g.key.digest)
				}
			}
		}
	}
}

// expire uncounts the pins whose last message the stream no longer holds
// (first: its first sequence): the bucket dropped them for a limit.
func (t *Tally) expire(first uint64) {
	i := 0
	for ; i < len(t.queue) && t.queue[i].seq < first; i++ {
		q := t.queue[i]
		if s, ok := t.slots[q.hash]; ok && s.seq == q.seq {
			t.remove(q.hash)
			t.stats.Dropped++
		}
	}
	t.queue = t.queue[i:]
}

// compact drops the queue entries of superseded messages once they
// outnumber the pins, so that the queue stays under twice the pins.
func (t *Tally) compact() {
	if len(t.queue) <= 2*len(t.slots)+64 {
		return
	}
	q := make([]queued, 0, len(t.slots))
	for _, e := range t.queue {
		if s, ok := t.slots[e.hash]; ok && s.seq == e.seq {
			q = append(q, e)
		}
	}
	t.queue = q
}

// each calls fn for every (agent, card version) with pins, and returns how
// many pins could not be decoded.
func (t *Tally) each(fn func(host, digest, agentURL string, n int)) (corrupt int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.groups {
		fn(g.key.host, g.key.digest, g.agentURL, g.n)
	}
	return t.corrupt
}

// version returns the memoized card version of digest ("" while a census
// found no body, for bodyRetry), if a census recorded it.
func (t *Tally) version(digest string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.versions[digest]
	switch {
	case v == nil:
		return "", false
	case v.known:
		return v.v, true
	case !v.checked.IsZero() && t.now().Sub(v.checked) < bodyRetry:
		return "", true
	}
	return "", false
}

// setVersion records the card version of digest (found: a census read its
// body), if a group holds it.
func (t *Tally) setVersion(digest, ver string, found bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v := t.versions[digest]; v != nil {
		if found {
			v.v, v.known = ver, true
		} else {
			v.checked = t.now()
		}
	}
}

// Stats returns the counters.
func (t *Tally) Stats() TallyStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Pins, s.Groups = len(t.slots), len(t.groups)
	return s
}
