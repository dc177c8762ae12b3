package census

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// DefaultResync is how often a Tally reads the buckets again from scratch:
// the bound on how long a removal the stream does not announce (a message
// deleted by hand) leaves a pin counted.
const DefaultResync = 15 * time.Minute

// Errors Tally.Refresh wraps: after a gap the next Refresh reads from
// scratch; after a stall it carries on from what was read.
var (
	ErrTallyGap     = errors.New("census: a bucket's changes arrived with a gap")
	ErrTallyStalled = errors.New("census: a bucket's changes stalled")
)

// Tally counts the tasks pinned per agent and card version from the pins
// bucket's stream: the first Refresh reads every pin, each later one only
// what was written since. With TallyOptions.Leases and Events it follows
// the leases and the last card.observed of every agent too, so a census
// costs O(changes) of reads. It memoizes the versions of pinned cards and
// keeps the parsed live cards (up to parsedBudget of bodies). About 260
// bytes per pin (BenchmarkTake's tally-B/pin).
//
// Safe for concurrent use; Refresh calls are serialized. Use NewTally.
type Tally struct {
	resync time.Duration
	now    func() time.Time

	mu            sync.Mutex
	pins          *follower[*group]
	leases        *follower[*store.Lease]     // nil: not followed
	observed      *follower[*events.Observed] // nil: not followed
	groups        map[groupKey]*group
	corrupt       int   // pins that do not decode
	undecodable   group // their group (never counted)
	corruptLeases int
	versions      map[string]*version
	parsed        map[string]parsedCard // the live cards of the last census
}

type parsedCard struct {
	card *detector.Card
	size int
}

const parsedBudget = 32 << 20

// version is a digest's card version (known once its body was read;
// checked: when a census last found none) and how many groups hold it.
type version struct {
	v       string
	known   bool
	checked time.Time
	refs    int
}

// bodyRetry is how long a census trusts that a pinned digest has no body.
const bodyRetry = time.Minute

// TallyOptions adjust a Tally.
type TallyOptions struct {
	// Leases (store.KVLeases.KV) and Events (the card stream), when set,
	// are followed too.
	Leases jetstream.KeyValue
	Events string
	// Resync defaults to DefaultResync; negative: only when needed.
	Resync time.Duration
	Now    func() time.Time
}

type groupKey struct{ host, digest, extended string }

// group is the pins of one groupKey; agentURL is one pin's.
type group struct {
	key      groupKey
	agentURL string
	n        int
}

// NewTally returns a Tally over the pins bucket kv (store.KVPins.KV) of the
// JetStream context js. It does no I/O.
func NewTally(js jetstream.JetStream, kv jetstream.KeyValue, opts TallyOptions) *Tally {
	if opts.Resync == 0 {
		opts.Resync = DefaultResync
	}
	t := &Tally{resync: opts.Resync, now: defaults.Clock(opts.Now)}
	t.pins = newFollower(js, kv, t.putPin, t.dropPin)
	if opts.Leases != nil {
		t.leases = newFollower(js, opts.Leases, t.putLease, t.dropLease)
	}
	if opts.Events != "" {
		t.observed = newStreamFollower(js, opts.Events, "card.observed.", putObserved, func(*events.Observed) {})
	}
	return t
}

// putObserved decodes a card.observed (nil: not one).
func putObserved(m jetstream.Msg) *events.Observed {
	ev, err := events.Decode(m)
	if err != nil {
		return nil
	}
	o, ok := ev.Data.(events.Observed)
	if !ok {
		return nil
	}
	return &o
}

// lastObserved returns the card.observed the Tally keeps.
func (t *Tally) lastObserved() (out []events.Observed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.observed != nil {
		t.observed.each(func(o *events.Observed) {
			if o != nil {
				out = append(out, *o)
			}
		})
	}
	return out
}

// Refresh reads everything at the first call (and after a gap, every
// Resync, or when a bucket was made again), otherwise what was written
// since the last call.
func (t *Tally) Refresh(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	err := t.pins.refresh(ctx, t.resync, now, func() {
		t.groups, t.corrupt, t.versions = map[groupKey]*group{}, 0, map[string]*version{}
	})
	if err != nil {
		return err
	}
	if t.leases != nil {
		if err := t.leases.refresh(ctx, t.resync, now, func() { t.corruptLeases = 0 }); err != nil {
			return err
		}
	}
	if t.observed != nil {
		if err := t.observed.refresh(ctx, t.resync, now, func() {}); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
	}
	return nil
}

func (t *Tally) putPin(m jetstream.Msg) *group {
	var p task.Pin
	if err := json.Unmarshal(m.Data(), &p); err != nil {
		t.corrupt++
		return &t.undecodable
	}
	host, err := events.AgentHost(p.AgentURL)
	if err != nil {
		return nil // not counted, as a scan does not
	}
	k := groupKey{host, p.Digest, p.Extended}
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
	return g
}

func (t *Tally) dropPin(g *group) {
	switch {
	case g == nil:
	case g == &t.undecodable:
		t.corrupt--
	default:
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

func (t *Tally) putLease(m jetstream.Msg) *store.Lease {
	var l store.Lease
	if err := json.Unmarshal(m.Data(), &l); err != nil {
		t.corruptLeases++
		return nil
	}
	return &l
}

func (t *Tally) dropLease(l *store.Lease) {
	if l == nil {
		t.corruptLeases--
	}
}

// scanLeases calls fn with every lease the Tally keeps; the error counts
// those that do not decode.
func (t *Tally) scanLeases(fn func(store.Lease)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leases == nil {
		return nil
	}
	t.leases.each(func(l *store.Lease) {
		if l != nil {
			fn(*l)
		}
	})
	if t.corruptLeases > 0 {
		return fmt.Errorf("census: %d lease value(s) skipped: %w", t.corruptLeases, store.ErrCorrupt)
	}
	return nil
}

// each calls fn for every group; the error counts the pins that do not
// decode.
func (t *Tally) each(fn func(k groupKey, agentURL string, n int)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.groups {
		fn(g.key, g.agentURL, g.n)
	}
	if t.corrupt > 0 {
		return fmt.Errorf("census: %d pin value(s) skipped: %w", t.corrupt, store.ErrCorrupt)
	}
	return nil
}

// version returns the memoized card version of digest ("" for bodyRetry
// after a census found no body).
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

// setVersion records digest's card version (found: its body was read).
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

// parsedCard returns digest's card and body size if the last census kept it.
func (t *Tally) parsedCard(digest string) (*detector.Card, int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.parsed[digest]
	return p.card, p.size, ok
}

// keepParsed keeps the cards of live (digest → body size) up to
// parsedBudget bytes and forgets the others.
func (t *Tally) keepParsed(cards map[string]*detector.Card, live map[string]int) {
	keep := make(map[string]parsedCard, len(live))
	total := 0
	for digest, size := range live {
		if c := cards[digest]; c != nil && total+size <= parsedBudget {
			keep[digest] = parsedCard{c, size}
			total += size
		}
	}
	t.mu.Lock()
	t.parsed = keep
	t.mu.Unlock()
}
