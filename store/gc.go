package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// CardsGC defaults (GCOptions). The grace is more than the time between
// storing a body and writing the pin or lease that names it.
const (
	DefaultGCInterval = 10 * time.Minute
	DefaultGCGrace    = time.Hour
	DefaultGCBatch    = 10_000
	// gcMarkerTTL is how long the purge marker of a removed body stays.
	gcMarkerTTL = time.Minute
)

// References calls mark with every card digest something still needs;
// CardsGC keeps those bodies. An error aborts the sweep: nothing is removed
// on an incomplete view.
type References func(ctx context.Context, mark func(digest string)) error

// PinLeaseReferences is the References of carddrift's stores: the digests
// digests(pin) returns for every pin (the task core's pin names its pinned
// and its last live digest), and every lease's digest and the digests of
// its split-brain window. A pin or lease that does not decode aborts the
// sweep (ErrCorrupt), so that a body it may name is not removed.
func PinLeaseReferences[T any](pins Scanner[T], digests func(T) []string, leases Scanner[Lease]) References {
	return func(ctx context.Context, mark func(string)) error {
		if err := pins.Scan(ctx, func(p T, _ uint64) error {
			for _, d := range digests(p) {
				mark(d)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("scan pins: %w", err)
		}
		if err := leases.Scan(ctx, func(l Lease, _ uint64) error {
			mark(l.Digest)
			for _, s := range l.Replicas.Seen {
				mark(s.Digest)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("scan leases: %w", err)
		}
		return nil
	}
}

// GCOptions configure CardsGC. Zero fields take their defaults.
type GCOptions struct {
	// References names the digests to keep (required; see
	// PinLeaseReferences).
	References References
	// Interval between sweeps and Grace, under which a body stored less
	// long ago is kept: at least 1s each.
	Interval, Grace time.Duration
	// Batch is how many bodies a sweep examines.
	Batch int
	// Logger receives a line per sweep that removed something and per
	// failed sweep (default: no logging).
	Logger *zerolog.Logger
	// Registerer registers carddrift_store_cards_removed_total (nil: not
	// registered).
	Registerer prometheus.Registerer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// CardsGC removes the card bodies that no pin or lease references, from a
// KVCards' bucket and its Object Store, a bounded batch at a time.
//
// A sweep reads the metadata of the next Batch bodies (in revision order
// from where the last sweep stopped, wrapping round), keeps those older than
// Grace as candidates and unmarks every digest References names. A body is
// removed when two sweeps in a row, Interval apart, left it unmarked at the
// same revision (the purge is conditional on it). A sweep that purged
// something reads the references again and restores each purged body one
// names (a pin written between the first read and the purge), then removes
// the objects of the rest. A removed body that is needed again is stored
// again by the next fetch that brings it; meanwhile a pin naming it is
// judged as pinned by digest alone, as when the byte limit dropped it.
//
// A sweep costs one or two scans of the pins and leases and the metadata of
// at most Batch bodies, nothing on the hot path (per-key TTLs would mean
// rewriting a body whenever a pin naming it is written). Memory is O(Batch)
// plus at most gcHoldBytes of purged values. Run owns its one goroutine;
// Sweep may be called directly (not concurrently with Run).
type CardsGC struct {
	js      jetstream.JetStream
	cards   *KVCards
	opts    GCOptions
	log     zerolog.Logger
	removed prometheus.Counter

	cursor   uint64            // revision the next batch starts at (0: the start)
	suspects map[string]uint64 // key → revision: unmarked candidates of the last sweep
}

// SweepResult is what one sweep did: how many bodies the batch read, how
// many of them (and of the last sweep's suspects) were older than Grace and
// unreferenced, and how many were removed.
type SweepResult struct {
	Examined, Candidates, Removed int
}

// NewCardsGC returns a CardsGC of cards, which js reaches (Bind's). It does
// no I/O.
func NewCardsGC(js jetstream.JetStream, cards *KVCards, opts GCOptions) (*CardsGC, error) {
	if js == nil || cards == nil || opts.References == nil {
		return nil, invalid("GCOptions.References", nil, "a JetStream, a KVCards and References are required")
	}
	setDefault(&opts.Interval, DefaultGCInterval)
	setDefault(&opts.Grace, DefaultGCGrace)
	setDefault(&opts.Batch, DefaultGCBatch)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval < time.Second {
		return nil, invalid("GCOptions.Interval", opts.Interval, "must be at least 1s")
	}
	if opts.Grace < time.Second {
		return nil, invalid("GCOptions.Grace", opts.Grace, "must be at least 1s")
	}
	if opts.Batch < 1 {
		return nil, invalid("GCOptions.Batch", opts.Batch, "must be positive")
	}
	g := &CardsGC{js: js, cards: cards, opts: opts, log: zerolog.Nop(), suspects: map[string]uint64{}}
	if opts.Logger != nil {
		g.log = *opts.Logger
	}
	g.removed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "carddrift_store_cards_removed_total",
		Help: "Card bodies removed because no pin or lease referenced them.",
	})
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(g.removed); err != nil {
			return nil, fmt.Errorf("store: register cards GC metrics: %w", err)
		}
	}
	return g, nil
}

// Run sweeps every Interval until ctx is done, then returns nil. A failed
// sweep is logged and the next one tries again.
func (g *CardsGC) Run(ctx context.Context) error {
	t := time.NewTicker(g.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		res, err := g.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			g.log.Warn().Err(err).Msg("store: card body sweep failed; nothing removed by it")
		case res.Removed > 0:
			g.log.Info().Int("removed", res.Removed).Int("examined", res.Examined).
				Msg("store: removed card bodies no pin or lease references")
		}
	}
}

// Sweep runs one sweep (see CardsGC).
func (g *CardsGC) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	batch, next, err := g.batch(ctx)
	if err != nil {
		return res, err
	}
	res.Examined = len(batch)
	cutoff := g.opts.Now().Add(-g.opts.Grace)
	cands := maps.Clone(g.suspects) // key → revision: the bodies this sweep may remove
	for _, e := range batch {
		// A suspect written again since has the batch's newer revision:
		// its first strike starts over.
		if e.Created().Before(cutoff) {
			cands[e.Key()] = e.Revision()
		}
	}
	if len(cands) > 0 {
		if err := g.opts.References(ctx, func(digest string) {
			if k, err := DigestKey(digest); err == nil {
				delete(cands, k)
			}
		}); err != nil {
			return res, fmt.Errorf("store: sweep card bodies: %w", err)
		}
	}
	res.Candidates = len(cands)
	suspects := map[string]uint64{}
	var errs []error
	var purged []purgedBody
	held := 0
	for k, rev := range cands {
		if last, ok := g.suspects[k]; !ok || last != rev || held >= gcHoldBytes {
			suspects[k] = rev // a first strike, or past what one sweep holds: the next sweep
			continue
		}
		p, removed, err := g.purge(ctx, k, rev)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if removed {
			held += len(p.value)
			purged = append(purged, p)
		}
	}
	g.suspects, g.cursor = suspects, next
	if len(purged) > 0 {
		res.Removed = g.settle(ctx, purged, &errs)
	}
	return res, errors.Join(errs...)
}

// gcHoldBytes bounds the values of the bodies one sweep purges and holds
// until settle has checked the references again.
const gcHoldBytes = 16 << 20

// purgedBody is a body a sweep purged and may restore: its key and the
// value it had (a large body's object marker: its object is deleted only
// once settle has found no reference).
type purgedBody struct {
	key   string
	value []byte
}

// settle closes the window between a sweep's reference scan and its
// purges: a pin or lease written in between (the writer found the body
// there, so did not store it again) names a body the scan did not see
// referenced. It reads the references again, after the purges, restores
// every purged body one names, removes the objects of the others and
// returns how many were removed. A failed read restores them all.
func (g *CardsGC) settle(ctx context.Context, purged []purgedBody, errs *[]error) int {
	needed := map[string]bool{}
	if err := g.opts.References(ctx, func(digest string) {
		if k, err := DigestKey(digest); err == nil {
			needed[k] = true
		}
	}); err != nil {
		*errs = append(*errs, fmt.Errorf("store: sweep card bodies: check references after removing: %w", err))
		for _, p := range purged {
			needed[p.key] = true
		}
	}
	removed := 0
	for _, p := range purged {
		if needed[p.key] {
			if _, err := g.cards.kv.Create(ctx, p.key, p.value); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				*errs = append(*errs, fmt.Errorf("store: restore card body %s: %w", p.key, err))
			}
			continue
		}
		removed++
		g.removed.Inc()
		if g.cards.obj != nil {
			if err := g.removeObject(ctx, p.key); err != nil {
				*errs = append(*errs, fmt.Errorf("store: remove card body %s from the object store: %w", p.key, err))
				continue
			}
			if err := g.dropDangling(ctx, p.key); err != nil {
				*errs = append(*errs, err)
			}
		}
	}
	return removed
}

// dropDangling purges key's object marker if one was written since the
// purge (a writer stored the body again, found the object still there and
// wrote only the marker) and its object is gone: left, every later Put
// would take it for the body stored, and no Get would find the body.
func (g *CardsGC) dropDangling(ctx context.Context, key string) error {
	e, err := g.cards.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: check card body %s after removing its object: %w", key, err)
	}
	if !bytes.HasPrefix(e.Value(), []byte(objectMarker)) {
		return nil
	}
	if _, err := g.cards.obj.GetInfo(ctx, key); !errors.Is(err, jetstream.ErrObjectNotFound) {
		return err // there (uploaded again), or unknown
	}
	if err := g.purgeAt(ctx, key, e.Revision()); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("store: purge card body %s's marker of a removed object: %w", key, err)
	}
	return nil
}

// batch reads the metadata of up to Batch bodies from the cursor and
// returns them with the cursor of the next batch (0 once the end is
// reached).
func (g *CardsGC) batch(ctx context.Context) ([]jetstream.KeyValueEntry, uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []jetstream.WatchOpt{jetstream.MetaOnly(), jetstream.IgnoreDeletes()}
	if g.cursor > 0 {
		opts = append(opts, jetstream.ResumeFromRevision(g.cursor))
	}
	w, err := g.cards.kv.WatchAll(ctx, opts...)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("store: sweep card bodies: %w", err)
	}
	defer w.Stop()
	var out []jetstream.KeyValueEntry
	for {
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, 0, fmt.Errorf("store: sweep card bodies: %w", ErrWatchClosed)
			}
			if e == nil { // the end of the bucket: wrap round next time
				return out, 0, nil
			}
			out = append(out, e)
			if len(out) >= g.opts.Batch {
				return out, e.Revision() + 1, nil
			}
		}
	}
}

// purge reads key's value and purges key at rev (conditionally: a body
// written again since is kept). It reports whether the body was purged,
// with the value it had; its object, if it has one, is settle's to remove.
func (g *CardsGC) purge(ctx context.Context, key string, rev uint64) (purgedBody, bool, error) {
	e, err := g.cards.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return purgedBody{}, false, nil
	}
	if err != nil {
		return purgedBody{}, false, fmt.Errorf("store: remove card body %s: %w", key, err)
	}
	if e.Revision() != rev { // written again
		return purgedBody{}, false, nil
	}
	err = g.purgeAt(ctx, key, rev)
	if errors.Is(err, jetstream.ErrKeyExists) { // revision mismatch: written again
		return purgedBody{}, false, nil
	}
	if err != nil {
		return purgedBody{}, false, fmt.Errorf("store: remove card body %s: %w", key, err)
	}
	return purgedBody{key: key, value: e.Value()}, true, nil
}

// removeObject deletes an object the way ObjectStore.Delete does, without
// the STREAM.PURGE request it ends with (a purge that fails leaves the
// object deleted and its chunks behind): it publishes the object's metadata
// marked deleted (a rollup of $O.<bucket>.M.<base64url name>), then rolls
// its chunk subject $O.<bucket>.C.<nuid> up to one empty message that
// expires (or, on a stream without message TTLs, stays: a few bytes).
// Publishing on the object's own subjects is all carddrift may do there.
func (g *CardsGC) removeObject(ctx context.Context, name string) error {
	info, err := g.cards.obj.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.NUID == "" {
		return jetstream.ErrBadObjectMeta
	}
	deleted := *info
	deleted.Deleted = true
	deleted.Size, deleted.Chunks, deleted.Digest = 0, 0, ""
	deleted.ModTime = time.Time{}
	meta, err := json.Marshal(&deleted)
	if err != nil {
		return err
	}
	m := nats.NewMsg("$O." + info.Bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(info.Name)))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = meta
	if _, err := g.js.PublishMsg(ctx, m); err != nil {
		return err
	}
	chunks := func(opts ...jetstream.PublishOpt) error {
		c := nats.NewMsg("$O." + info.Bucket + ".C." + info.NUID)
		c.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		_, err := g.js.PublishMsg(ctx, c, opts...)
		return err
	}
	err = chunks(jetstream.WithMsgTTL(gcMarkerTTL))
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeMessageTTLDisabled {
		err = chunks()
	}
	return err
}

// purgeAt purges key if still at rev, leaving a marker that expires; in a
// bucket Provision did not make (no message TTLs) the marker stays.
func (g *CardsGC) purgeAt(ctx context.Context, key string, rev uint64) error {
	err := g.cards.kv.Purge(ctx, key, jetstream.LastRevision(rev), jetstream.PurgeTTL(gcMarkerTTL))
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeMessageTTLDisabled {
		err = g.cards.kv.Purge(ctx, key, jetstream.LastRevision(rev))
	}
	return err
}
