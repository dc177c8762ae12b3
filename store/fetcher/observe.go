package fetcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
)

// ErrStore is wrapped by Observe errors that come from Options.Leases or
// Options.Cards (not from the agent): they are transient, so retry the event
// later rather than reporting the card unreachable.
var ErrStore = errors.New("fetcher: lease or card store failed")

// flight is one in-process observation of a card URL, shared by every caller
// that joins it. Its goroutine is started by join and owned by the Fetcher
// (counted in Fetcher.wg); it exits when the observation completes, which the
// flight budget bounds, and promptly after Close.
type flight struct {
	force     bool      // an unconditional fetch is required
	requested time.Time // when it was asked for: a lease satisfies a force only if a full fetch completed since
	done      chan struct{}
	next      *flight // forced flight queued behind this unforced one (guarded by Fetcher.mu)

	// Set before done is closed, read-only afterwards.
	obs    Observation
	fullAt time.Time // when the full fetch that obs reflects completed
	err    error
}

// Observe returns a live observation of the card at cardURL (in the
// CanonicalURL form, which Observation.CardURL then carries), with its Card
// and Raw body always filled: the shared lease's when it is fresh and no
// periodic full fetch is due, else a revalidation or a fetch. With force —
// evidence of drift — it makes an unconditional fetch, unless a full fetch by
// any worker completed after this call began.
//
// The flight is not bound to ctx: a caller whose ctx ends leaves with a
// *FetchError (ReasonCanceled or ReasonTimeout) while the flight completes for
// the others. Observe returns within two flights (a forced caller may wait
// for the running one, then its own), each about TotalTimeout + 6×StoreTimeout.
//
// Errors: a *FetchError when the card is unreachable (publish card.unreachable
// with its Reason); an error wrapping ErrStore when the lease or card store
// failed (transient: retry later).
func (f *Fetcher) Observe(ctx context.Context, cardURL string, force bool) (Observation, error) {
	requested := f.opts.Now()
	canon, err := CanonicalURL(cardURL)
	if err != nil {
		return observationAt(cardURL), err
	}
	return f.observeKey(ctx, canon, force, requested)
}

// observeKey is Observe of a lease key: a card URL in CanonicalURL form, or
// an extended card's key (ExtendedEndpoint.Key).
func (f *Fetcher) observeKey(ctx context.Context, cardURL string, force bool, requested time.Time) (Observation, error) {
	if ctx.Err() != nil {
		return observationAt(cardURL), ctxError(cardURL, ctx)
	}
	if obs, ok := f.fromCopy(cardURL, force, requested); ok {
		return obs, nil
	}
	for {
		fl, err := f.join(cardURL, force, requested)
		if err != nil {
			return observationAt(cardURL), err
		}
		select {
		case <-fl.done:
		case <-ctx.Done():
			return observationAt(cardURL), ctxError(cardURL, ctx)
		}
		if fl.err != nil {
			return observationAt(cardURL), fl.err
		}
		// A forced caller that joined a flight begun before it asked must not
		// get a full fetch older than its request; it then takes the next one.
		if force && fl.fullAt.Before(requested) {
			continue
		}
		return fl.obs, nil
	}
}

// fromCopy answers an observation from this process alone when no flight
// for url is running, the lease copy holds a lease that answers the request
// and the card cache holds its body: what a flight started now would
// return, without its goroutine.
func (f *Fetcher) fromCopy(url string, force bool, requested time.Time) (Observation, bool) {
	if f.copy == nil {
		return Observation{}, false
	}
	f.mu.Lock()
	running := f.flights[url] != nil
	f.mu.Unlock()
	if running {
		return Observation{}, false // join it, as before
	}
	lease, _, ok := f.copy.get(store.EncodeKey(url))
	if !ok || lease.Digest == "" {
		return Observation{}, false
	}
	now := f.opts.Now()
	if lease.Failing(now) || !answers(lease, force, requested, now, f.fullDue(lease, now)) {
		return Observation{}, false
	}
	e := f.cache.get(lease.Digest)
	if e == nil {
		return Observation{}, false
	}
	obs := leaseObservation(lease, e)
	obs.VerifiedAt = lease.LastFullFetch
	obs.Window = f.opts.ConsistencyWindow
	return obs, true
}

// answers reports whether lease l, which has a digest, answers a request
// without HTTP: a forced one when a full fetch completed since it was
// requested, another when the lease is fresh and no periodic full fetch is
// due.
func answers(l store.Lease, force bool, requested, now time.Time, fullDue bool) bool {
	if force {
		return !l.LastFullFetch.Before(requested)
	}
	return l.Fresh(now) && !fullDue
}

// join returns the flight the caller should wait for, starting or queueing one
// when needed.
func (f *Fetcher) join(url string, force bool, requested time.Time) (*flight, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errClosedFetch(url)
	}
	cur := f.flights[url]
	switch {
	case cur == nil:
		fl := newFlight(force, requested)
		f.flights[url] = fl
		f.start(url, fl)
		return fl, nil
	case !force || cur.force:
		return cur, nil
	default:
		// A revalidation is running: queue one forced flight behind it, shared
		// by every forced caller that arrives meanwhile.
		if cur.next == nil {
			cur.next = newFlight(true, requested)
		}
		return cur.next, nil
	}
}

func newFlight(force bool, requested time.Time) *flight {
	return &flight{force: force, requested: requested, done: make(chan struct{})}
}

// start runs fl on its own goroutine, and with the first flight the lease
// copy's watch (which then runs until Close). Called with f.mu held and f
// not closed.
func (f *Fetcher) start(url string, fl *flight) {
	if f.copy != nil && !f.copying {
		f.copying = true
		f.wg.Go(func() { f.copy.run(f.base) })
	}
	f.started.Add(1)
	f.wg.Add(1)
	go f.run(url, fl)
}

// flightBudget bounds one flight: one fetch and a handful of store calls.
func (f *Fetcher) flightBudget() time.Duration {
	return f.opts.TotalTimeout + 6*f.opts.StoreTimeout
}

// run is the body of a flight's goroutine.
func (f *Fetcher) run(url string, fl *flight) {
	defer f.wg.Done()
	ctx, cancel := context.WithTimeout(f.base, f.flightBudget())
	fl.obs, fl.fullAt, fl.err = f.observe(ctx, url, fl.force, fl.requested)
	fl.obs.VerifiedAt = fl.fullAt
	fl.obs.Window = f.opts.ConsistencyWindow
	cancel()

	f.mu.Lock()
	switch next := fl.next; {
	case next == nil:
		delete(f.flights, url)
	case f.closed:
		delete(f.flights, url)
		next.err = errClosedFetch(url)
		close(next.done)
	default:
		f.flights[url] = next
		f.start(url, next)
	}
	f.mu.Unlock()
	close(fl.done)
}

// observe is the cross-worker lease protocol for one flight: read the
// lease, answer from it when it can, else fetch and record the result in
// one compare-and-set on the revision read (settle).
func (f *Fetcher) observe(ctx context.Context, url string, force bool, requested time.Time) (Observation, time.Time, error) {
	obs := observationAt(url)
	useCopy := true  // the lease copy may answer
	missing := false // the lease's body was looked for and not found
	for {
		lease, rev, found, copied, err := f.readLease(ctx, url, useCopy)
		if err != nil {
			return obs, time.Time{}, f.storeFailure(ctx, url, "get lease", err)
		}
		now := f.opts.Now()
		fullDue := f.fullDue(lease, now)

		// A failure another worker (or this one) recorded is still being
		// backed off: report it without fetching. Evidence does not bring an
		// agent back faster, so forced requests share it too. A failure the
		// copy shows is read again from the store first: the copy may trail
		// the success that ended it.
		if lease.Failing(now) {
			if copied {
				useCopy = false
				continue
			}
			return obs, time.Time{}, recordedFailure(url, lease)
		}

		// The lease already answers the request: no HTTP at all.
		if lease.Digest != "" && answers(lease, force, requested, now, fullDue) {
			e, err := f.loadCard(ctx, lease.Digest)
			if err != nil {
				return obs, time.Time{}, f.storeFailure(ctx, url, "get card body", err)
			}
			if e != nil {
				return leaseObservation(lease, e), lease.LastFullFetch, nil
			}
			missing = true // the body is not available to this worker: fetch it
		}

		// Revalidate when we know an ETag and still have the body it names.
		var prev *cardEntry
		if !force && !fullDue && lease.ETag != "" && lease.Digest != "" {
			if prev, err = f.loadCard(ctx, lease.Digest); err != nil {
				return obs, time.Time{}, f.storeFailure(ctx, url, "get card body", err)
			}
			missing = missing || prev == nil
		}
		return f.fetchAndRecord(ctx, read{lease: lease, rev: rev, found: found, prev: prev, missing: missing, force: force, requested: requested}, force || fullDue)
	}
}

// read is the lease a fetch was decided on: its revision (found: it
// existed), the body a revalidation names, and the request.
type read struct {
	lease     store.Lease
	rev       uint64
	found     bool
	prev      *cardEntry
	missing   bool // the body the lease names was looked for and not found
	force     bool
	requested time.Time
}

// reported is a card.observed to publish: Fetches > 0 fetches since Since.
type reported struct {
	fetches int
	since   time.Time
}

// Classes of a result (store.Reported.Class).
const (
	classFetched     = "fetched"
	classNotModified = "not-modified"
	classUnreachable = "unreachable"
)

// signerOf identifies who signed obs's card as far as its body tells (see
// store.Reported.Signer).
func signerOf(obs Observation) string {
	if obs.Card == nil || !obs.Card.HasSignatures {
		return ""
	}
	sum := sha256.Sum256(obs.Raw)
	return hex.EncodeToString(sum[:16])
}

// classOf is the class of a successful fetch of the card lease knew: a
// 304, or a 200 of its digest and ETag to an unconditional request, did
// not modify it.
func classOf(lease store.Lease, obs Observation) string {
	if obs.Status == 304 || (obs.Full && obs.Digest == lease.Digest && obs.ETag == lease.ETag) {
		return classNotModified
	}
	return classFetched
}

// fetchAndRecord fetches the card of r's lease, stores the body, and
// records the result (settle).
func (f *Fetcher) fetchAndRecord(ctx context.Context, r read, full bool) (Observation, time.Time, error) {
	url := r.lease.CardURL
	req := Request{URL: url, NoCache: full}
	if r.prev != nil {
		req.ETag, req.Digest, req.MaxAge = r.lease.ETag, r.lease.Digest, r.lease.MaxAge
	}
	obs, err := f.fetchKey(ctx, req)
	if err != nil {
		f.notify(obs, err)
		var fe *FetchError
		if errors.As(err, &fe) && fe.Reason != ReasonCanceled && ctx.Err() == nil {
			f.recordFailure(ctx, r, fe)
		}
		return observationAt(url), time.Time{}, err
	}

	fullAt := r.lease.LastFullFetch
	stored := obs.Status == 304 // the body of a 304 is the lease's
	if obs.Status == 304 {
		obs.Raw, obs.Card, obs.Fingerprint = r.prev.card.Raw, r.prev.card, r.prev.fingerprint
	} else {
		fullAt = obs.FetchedAt
		f.cache.put(&cardEntry{digest: obs.Digest, card: obs.Card, fingerprint: obs.Fingerprint})
		// The lease read names this card: its body was stored before that
		// lease was written, and the collector keeps what a lease names. The
		// write is skipped then (a KV create of a key that exists costs two
		// round trips), unless the body was found missing, or the lease this
		// fetch ends up overwriting names another card (settle, below).
		if !r.found || r.lease.Digest != obs.Digest || r.missing {
			if err := f.putBody(ctx, obs); err != nil {
				return observationAt(url), time.Time{}, err
			}
			stored = true
		}
	}
	signer := signerOf(obs)
	var next store.Lease
	var report reported
	var won *cardEntry // the body of another worker's record that stands
	var putErr error
	cur, wrote, err := f.settle(ctx, r, func(cur store.Lease) (store.Lease, bool) {
		missing := false
		if f.stands(cur, r, obs) {
			if won, _ = f.loadCard(context.WithoutCancel(ctx), cur.Digest); won != nil {
				return cur, false
			}
			missing = true
		}
		if !stored && (missing || cur.Digest != obs.Digest) {
			if putErr = f.putBody(context.WithoutCancel(ctx), obs); putErr != nil {
				return cur, false
			}
			stored = true
		}
		next = store.Lease{
			CardURL:       url,
			Digest:        obs.Digest,
			ETag:          obs.ETag,
			MaxAge:        obs.MaxAge,
			FetchedAt:     obs.FetchedAt,
			LastFullFetch: fullAt,
		}
		report = f.advance(cur, &next, classOf(cur, obs), signer)
		return next, true
	})
	switch {
	case putErr != nil:
		return observationAt(url), time.Time{}, putErr
	case err != nil:
		// The observation stands; other workers will fetch for themselves.
		f.storeError(fmt.Errorf("%w: record lease %s: %w", ErrStore, url, err))
		obs.Replicas = next.Replicas
	case !wrote:
		// Another worker's record stands: it is the observation every
		// worker shares, and its write decided what to report.
		obs.Replicas = cur.Replicas
		f.notify(obs, nil)
		return leaseObservation(cur, won), cur.LastFullFetch, nil
	default:
		obs.Replicas, obs.Fetches, obs.Since = next.Replicas, report.fetches, report.since
	}
	f.notify(obs, nil)
	return obs, fullAt, nil
}

// putBody stores obs's body. What names a digest promises its body to every
// reader: when the write fails nothing is recorded and the callers retry.
func (f *Fetcher) putBody(ctx context.Context, obs Observation) error {
	if f.cards == nil {
		return nil
	}
	sctx, cancel := f.storeCtx(ctx)
	err := f.cards.Put(sctx, obs.Digest, obs.Raw)
	cancel()
	if err != nil {
		f.notify(obs, nil)
		err = fmt.Errorf("%w: put card body %s: %w", ErrStore, obs.Digest, err)
		f.storeError(err)
	}
	return err
}

// stands reports whether cur, the lease another worker recorded while this
// worker fetched obs for r (or the lease read, when only its body was
// missing), is to be used instead of recording obs: it answers r and holds
// obs's card. A lease of another card does not stand: obs is recorded
// after it, and the window of live digests holds both (split brain).
func (f *Fetcher) stands(cur store.Lease, r read, obs Observation) bool {
	now := f.opts.Now()
	return cur.Digest == obs.Digest && !cur.Failing(now) && answers(cur, r.force, r.requested, now, f.fullDue(cur, now))
}

// advance carries over to next, the lease a fetch records, what the lease
// before it knew: when the live card last changed, the window of live
// digests with this fetch in it (detector.Replicas: every 200 and 304
// counts), and what card.observed last reported. It returns the report to
// publish: one when the digest, the signer or the result's class changed
// or the heartbeat is due, none (fetches 0) when the fetch is only counted.
// A card fetched and then not modified is no change of class: the 304
// tells nothing new of it.
func (f *Fetcher) advance(prev store.Lease, next *store.Lease, class, signer string) reported {
	next.ChangedAt = prev.ChangedAt
	if prev.Digest != next.Digest || next.ChangedAt.IsZero() {
		next.ChangedAt = next.FetchedAt
	}
	next.Replicas = prev.Replicas.Observe(next.Digest, next.FetchedAt, f.opts.ConsistencyWindow)

	last, now := prev.Reported, next.FetchedAt
	r := reported{fetches: last.Fetches + 1, since: last.Since}
	if last.Fetches == 0 {
		r.since = now
	}
	same := last.Digest == next.Digest && last.Signer == signer &&
		(last.Class == class || last.Class == classFetched && class == classNotModified)
	if same && f.opts.ObserveHeartbeat > 0 && now.Sub(last.At) < f.opts.ObserveHeartbeat {
		next.Reported = last
		next.Reported.Class, next.Reported.Fetches, next.Reported.Since = class, r.fetches, r.since
		return reported{}
	}
	next.Reported = store.Reported{Digest: next.Digest, Signer: signer, Class: class, At: now}
	return r
}

// settle records what a fetch leaves on the lease of r in one
// compare-and-set on the revision read before the fetch: next returns the
// lease to write over cur (the lease the fetch was decided on, then the
// winner's of each lost race), or false when cur stands. A lost race reads the
// lease again and asks next of the winner's record. It returns the lease
// recorded and whether this fetch wrote it: at most one successful write
// per fetch.
func (f *Fetcher) settle(ctx context.Context, r read, next func(cur store.Lease) (store.Lease, bool)) (store.Lease, bool, error) {
	ctx = context.WithoutCancel(ctx) // record even if the flight budget just ran out
	cur, rev, found := r.lease, r.rev, r.found
	for range 4 {
		l, write := next(cur)
		if !write {
			return cur, false, nil
		}
		_, err := f.putLease(ctx, l, rev, found)
		if !isConflict(err) {
			return l, err == nil, err
		}
		if cur, rev, found, err = f.getLease(ctx, l.CardURL); err != nil {
			return cur, false, err
		}
	}
	return cur, false, store.ErrConflict
}

// MarkInconsistent records on the lease of cardURL that card.inconsistent
// was published for the split-brain episode that began at since
// (detector.Replicas.Reported), so that no worker publishes it again. It does
// nothing when the lease's episode is another one or already marked.
// Errors wrap ErrStore.
func (f *Fetcher) MarkInconsistent(ctx context.Context, cardURL string, since time.Time) error {
	if canon, err := CanonicalURL(cardURL); err == nil {
		cardURL = canon
	}
	for range 8 {
		// From the store: a copy that trailed it could show another episode.
		lease, rev, found, err := f.getLease(ctx, cardURL)
		if err != nil {
			return f.storeFailure(ctx, cardURL, "get lease", err)
		}
		if !found || lease.Replicas.Reported || !lease.Replicas.Since.Equal(since) {
			return nil
		}
		lease.Replicas.Reported = true
		_, err = f.putLease(ctx, lease, rev, true)
		if err == nil {
			return nil
		}
		if !isConflict(err) {
			return f.storeFailure(ctx, cardURL, "mark inconsistent", err)
		}
	}
	return fmt.Errorf("%w: mark inconsistent %s: %w", ErrStore, cardURL, store.ErrConflict)
}

// recordFailure records a failed fetch on the lease of r, keeping the
// previous observation, with a backoff that starts at the agent's lease
// (MinLease for an agent never fetched) and doubles with each failure in a
// row (up to MaxLease), in one compare-and-set (settle): a failure or a
// success another worker recorded first stands. Best effort: without it,
// workers fetch for themselves.
func (f *Fetcher) recordFailure(ctx context.Context, r read, fe *FetchError) {
	detail := ""
	if fe.Err != nil {
		detail = fe.Err.Error()
		if len(detail) > 256 {
			detail = detail[:256]
		}
	}
	_, _, err := f.settle(ctx, r, func(lease store.Lease) (store.Lease, bool) {
		now := f.opts.Now()
		if lease.Failing(now) || lease.Digest != "" && answers(lease, r.force, r.requested, now, f.fullDue(lease, now)) {
			return lease, false // a failure or a success recorded meanwhile
		}
		base := lease.MaxAge
		if base <= 0 {
			base = max(f.opts.MinLease, 0)
		}
		lease.FailCount++
		if lease.FailCount == 1 || lease.FailingSince.IsZero() {
			lease.FailingSince = now
		}
		backoff := min(base<<min(lease.FailCount-1, 6), max(f.opts.MaxLease, base))
		lease.Reported.Class = classUnreachable
		lease.FailedAt, lease.FailReason, lease.FailStatus, lease.FailDetail = now, string(fe.Reason), fe.Status, detail
		lease.RetryAt = now.Add(backoff)
		return lease, true
	})
	if err != nil {
		f.storeError(fmt.Errorf("%w: record failure %s: %w", ErrStore, r.lease.CardURL, err))
	}
}

// errRecorded is the cause of a failure reported from the lease.
type errRecorded struct {
	at     time.Time
	detail string
}

func (e errRecorded) Error() string {
	msg := "failed at " + e.at.UTC().Format(time.RFC3339Nano) + " (shared; not fetched again until the backoff ends)"
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

// recordedFailure is the *FetchError of a failure recorded on the lease.
func recordedFailure(url string, l store.Lease) error {
	return &FetchError{URL: url, Reason: Reason(l.FailReason), Status: l.FailStatus, Err: errRecorded{at: l.FailedAt, detail: l.FailDetail}}
}

func (f *Fetcher) fullDue(l store.Lease, now time.Time) bool {
	return f.opts.FullFetchInterval > 0 && l.Digest != "" && now.Sub(l.LastFullFetch) >= f.opts.FullFetchInterval
}

func (f *Fetcher) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.opts.StoreTimeout)
}

// readLease reads the lease of url: from the lease copy when useCopy is set
// and the copy holds it (copied), else from the store.
func (f *Fetcher) readLease(ctx context.Context, url string, useCopy bool) (l store.Lease, rev uint64, found, copied bool, err error) {
	if useCopy && f.copy != nil {
		if l, rev, ok := f.copy.get(store.EncodeKey(url)); ok {
			return l, rev, true, true, nil
		}
	}
	l, rev, found, err = f.getLease(ctx, url)
	return l, rev, found, false, err
}

// getLease reads the lease of url from the store (and records it in the
// copy).
func (f *Fetcher) getLease(ctx context.Context, url string) (l store.Lease, rev uint64, found bool, err error) {
	sctx, cancel := f.storeCtx(ctx)
	defer cancel()
	l, rev, err = f.leases.Get(sctx, url)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Lease{CardURL: url}, 0, false, nil
	case err != nil:
		return store.Lease{}, 0, false, err
	}
	if f.copy != nil {
		f.copy.put(store.EncodeKey(url), l, rev)
	}
	return l, rev, true, nil
}

// putLease writes l with compare-and-set at rev (a create when !found), and
// records the write in the copy; a lost compare-and-set drops the copy's
// revision (or the key, when the outcome is unknown).
func (f *Fetcher) putLease(ctx context.Context, l store.Lease, rev uint64, found bool) (uint64, error) {
	sctx, cancel := f.storeCtx(ctx)
	defer cancel()
	var n uint64
	var err error
	key := store.EncodeKey(l.CardURL)
	if f.copy != nil {
		f.copy.writing(key, rev)
	}
	if !found {
		n, err = f.leases.Create(sctx, l)
	} else {
		n, err = f.leases.Update(sctx, l, rev)
	}
	if f.copy != nil {
		f.copy.wrote(key, rev, l, n, err)
	}
	return n, err
}

// isConflict reports a lost compare-and-set: someone else wrote first.
func isConflict(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound)
}

// loadCard returns the parsed card for digest from the cache or Cards, or nil
// when neither has it.
func (f *Fetcher) loadCard(ctx context.Context, digest string) (*cardEntry, error) {
	if e := f.cache.get(digest); e != nil {
		return e, nil
	}
	if f.cards == nil {
		return nil, nil
	}
	sctx, cancel := f.storeCtx(ctx)
	raw, err := f.cards.Get(sctx, digest)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	card, err := f.parse(raw)
	if err != nil {
		// Stored bodies were parsed before they were stored; one that no longer
		// parses is treated as missing, and fetched again.
		f.storeError(fmt.Errorf("%w: stored card %s does not parse: %w", ErrStore, digest, err))
		return nil, nil
	}
	e := &cardEntry{digest: digest, card: card, fingerprint: detector.Fingerprint(card)}
	f.cache.put(e)
	return e, nil
}

func leaseObservation(l store.Lease, e *cardEntry) Observation {
	return Observation{
		Observation: detector.Observation{
			CardURL:     l.CardURL,
			Digest:      l.Digest,
			Fingerprint: e.fingerprint,
			ETag:        l.ETag,
			FetchedAt:   l.FetchedAt,
			Card:        e.card,
		},
		MaxAge:    l.MaxAge,
		Raw:       e.card.Raw,
		FromLease: true,
		Replicas:  l.Replicas,
	}
}

func (f *Fetcher) notify(obs Observation, err error) {
	if f.opts.OnFetch != nil {
		f.opts.OnFetch(obs, err)
	}
}

func (f *Fetcher) storeError(err error) {
	if f.opts.OnStoreError != nil {
		f.opts.OnStoreError(err)
	}
}

// storeFailure reports a store error, unless the flight's own deadline or
// Close caused it.
func (f *Fetcher) storeFailure(ctx context.Context, url, op string, err error) error {
	if ctx.Err() != nil {
		return ctxError(url, ctx)
	}
	return fmt.Errorf("%w: %s %s: %w", ErrStore, op, url, err)
}

// ctxError is the *FetchError of a context that ended: its deadline is a
// timeout, anything else (the caller, Close) a cancellation.
func ctxError(url string, ctx context.Context) error {
	cause := context.Cause(ctx)
	r := ReasonCanceled
	if errors.Is(cause, context.DeadlineExceeded) {
		r = ReasonTimeout
	}
	return &FetchError{URL: url, Reason: r, Err: cause}
}
