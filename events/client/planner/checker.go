package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/internal/observation"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// CheckerOptions configure a Checker. Give it what the workers use — the
// same lease and card stores, the same fetch settings — so that a check costs
// no extra fetch while the agent's lease is fresh and sees the card the
// workers see.
type CheckerOptions struct {
	// Fetcher, if set, is used as is; the caller owns it (Close does not
	// close it).
	Fetcher *fetcher.Fetcher
	// Fetch configures the Checker's own fetcher when Fetcher is nil (Close
	// closes it). Set Fetch.Leases and Fetch.Cards to the workers' stores
	// (store.Bind) to share their leases; Fetch.Allow widens the SSRF guard
	// as the workers' --fetch-allow does; Fetch.Credentials (a
	// *fetcher.Credentials, or the *fetcher.CredentialsFile of carddrift
	// serve --agent-credentials) are what the Checker presents to an agent
	// origin for its authenticated extended card, as the workers do (a
	// Fetcher passed in presents its own). Without a credential for an
	// agent, a task that uses the extended card is judged on the public
	// card (Decision.Extended).
	Fetch fetcher.Options
	// Cards resolves WithPinnedDigest to a card body. Default Fetch.Cards.
	Cards store.Cards
	// RequireSigned judges as carddrift serve --require-signed-cards does:
	// a live card none of whose signatures verifies with a trusted key is
	// a breaking signature-required finding for every task. Set it as the
	// workers run.
	RequireSigned bool
	// Now is the clock split brain is judged at (default time.Now), as the
	// workers' is.
	Now func() time.Time
}

// Checker answers, before a planner submits (or re-submits) a task, whether
// the live card of an agent still satisfies it. Safe for concurrent use;
// Close it when done.
type Checker struct {
	f      *fetcher.Fetcher
	own    bool
	cards  store.Cards
	signed bool
	now    func() time.Time

	closeOnce sync.Once
	closeErr  error
}

// NewChecker builds a Checker. It does not touch the network. Errors wrap
// ErrInvalidOptions (with the fetcher's validation error).
func NewChecker(opts CheckerOptions) (*Checker, error) {
	c := &Checker{f: opts.Fetcher, cards: opts.Cards, signed: opts.RequireSigned, now: defaults.Clock(opts.Now)}
	if c.cards == nil {
		c.cards = opts.Fetch.Cards
	}
	if c.f == nil {
		f, err := fetcher.New(opts.Fetch)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		c.f, c.own = f, true
	}
	return c, nil
}

// Close closes the Checker's own fetcher (not one passed in
// CheckerOptions.Fetcher). Safe to call twice.
func (c *Checker) Close() error {
	c.closeOnce.Do(func() {
		if c.own {
			c.closeErr = c.f.Close()
		}
	})
	return c.closeErr
}

// CheckOption adds to one Check.
type CheckOption func(*checkConfig)

type checkConfig struct {
	cardURL      string
	force        bool
	pinnedRaw    []byte
	pinnedCard   *detector.Card
	pinnedDigest string
	posture      detector.Posture
}

// WithPinned gives the card the planner planned against, as the JSON it
// read: Check then also diffs it against the live card and judges the task
// (Decision.Verdict).
func WithPinned(raw []byte) CheckOption {
	return func(c *checkConfig) { c.pinnedRaw = raw }
}

// WithPinnedCard is WithPinned for a card already parsed with
// detector.Parse.
func WithPinnedCard(card *detector.Card) CheckOption {
	return func(c *checkConfig) { c.pinnedCard = card }
}

// WithPinnedDigest names the planned-against card by digest; its body is
// read from CheckerOptions.Cards (where workers store every card they pin or
// fetch). ErrUnknownPinned if it is not there.
func WithPinnedDigest(digest string) CheckOption {
	return func(c *checkConfig) { c.pinnedDigest = digest }
}

// WithCardURL checks the card at this URL instead of the agent's well-known
// card URL (the cardUrl a task was submitted with).
func WithCardURL(cardURL string) CheckOption {
	return func(c *checkConfig) { c.cardURL = cardURL }
}

// WithForce makes the check fetch the card unconditionally, bypassing the
// shared lease and the ETag — for when the planner has evidence of drift. A
// full fetch by any worker that completes meanwhile satisfies it.
func WithForce() CheckOption {
	return func(c *checkConfig) { c.force = true }
}

// WithPosture judges the verdict with this posture instead of
// requirements.Posture.
func WithPosture(p detector.Posture) CheckOption {
	return func(c *checkConfig) { c.posture = p }
}

// Decision is the answer of Check.
type Decision struct {
	// AgentURL is the agent asked about; CardURL the card URL that answered
	// (for the extended card, its lease key: fetcher.IsExtendedKey).
	AgentURL, CardURL string
	// Extended is, for a task that uses the authenticated extended card
	// (requirements.ExtendedCard), the card that answered, as a worker's
	// card.pinned says it: events.ExtendedPinned — the extended card, asked
	// for with the credential held for the agent's origin;
	// events.ExtendedUnavailable — the public card, because no extended card
	// can be asked for (no credential, none offered). "" for any other task.
	Extended string
	// Live identifies the live card; FromLease is set when no request was
	// made (a fresh shared lease answered).
	Live      events.CardRef
	FromLease bool
	// Card is the live card (read-only: it is shared with the fetcher's
	// cache): the extended card when Extended is events.ExtendedPinned. Card.Raw is the body as served: submit it as
	// events.Submitted.Card when (re-)planning against it.
	Card *detector.Card
	// Unmet lists what of the task's requirements the live card does not
	// satisfy (see Unsatisfied); empty when it satisfies them all.
	Unmet []Unmet

	// Pinned, Findings and Verdict are set only when a pinned card was given
	// (WithPinned, WithPinnedCard, WithPinnedDigest): the pinned card's
	// identity, every finding between it and the live card, and the task's
	// verdict exactly as a worker would judge it (task.Decide, the worker's
	// own decision: with the signers of both cards, the agent's split-brain
	// window from the shared lease and CheckerOptions.RequireSigned). When
	// the agent renamed the task's skill, Unmet says the old id is gone and
	// a degrade verdict names the new one (Verdict.ReplanSkill). For a task
	// that uses the extended card the pinned card is its extended card; when
	// Extended is events.ExtendedUnavailable it is not judged against the
	// public card (task.Pin.LostExtended): as a worker pins such a task again
	// on the public card, Findings and Verdict are the public card's own (no
	// drift).
	Pinned   *events.CardRef
	Findings []detector.Finding
	Verdict  *detector.Verdict
}

// Satisfied reports whether the live card satisfies every requirement.
func (d Decision) Satisfied() bool { return len(d.Unmet) == 0 }

// OK reports whether the planner may submit (or go on with) the task as
// planned: the live card satisfies it and, when a pinned card was given,
// the verdict is continue.
func (d Decision) OK() bool {
	return d.Satisfied() && (d.Verdict == nil || d.Verdict.Action == detector.Continue)
}

// Check reads the live card of agentURL through the Checker's fetcher —
// the shared lease when fresh, else a revalidation or fetch, exactly as a
// worker does on a capability-dependent transition — and tells whether it
// satisfies requirements (Decision.Unmet, see Unsatisfied). For a task that
// uses the authenticated extended card (requirements.ExtendedCard) the live
// card is the extended card, asked for with the Checker's credentials
// exactly as a worker asks for it; without a credential for the agent's
// origin it is the public card (Decision.Extended). With a pinned
// card (WithPinned, WithPinnedCard, WithPinnedDigest) it also judges the
// task as a worker would (task.Decide), with requirements.Posture (or
// WithPosture): the pinned card's signatures are verified as a worker
// verifies a client's card (with the keys of the agent's live cards), the
// live card's are the fetcher's, and the shared lease's split-brain window
// adds replicas-disagree. A pinned digest whose body is not stored is
// ErrUnknownPinned, where a worker would judge pinned-card-unknown: the
// planner asks about a card it names, and a digest nobody stored names
// none it can be told about.
//
// Errors: *UnreachableError (matches ErrUnreachable) when the live card
// cannot be read — never a satisfied Decision; ErrInvalidPinned,
// ErrUnknownPinned for a pinned card that cannot be used; ErrStore for a
// failing store (transient). The Decision is zero on error. An extended card
// refused (401, 403) is an *UnreachableError with Reason
// fetcher.ReasonUnauthorized or ReasonForbidden. No error and no Decision
// ever repeats a credential.
func (c *Checker) Check(ctx context.Context, requirements detector.Requirements, agentURL string, opts ...CheckOption) (Decision, error) {
	var cfg checkConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	pinned, pinnedRef, err := c.pinned(ctx, &cfg)
	if err != nil {
		return Decision{}, err
	}
	pin := task.Pin{AgentURL: agentURL, CardURL: cfg.cardURL, Requirements: requirements}
	if requirements.ExtendedCard {
		// A task that uses the extended card was planned on it (A2A: a
		// client's extended card replaces the public one for its session).
		pin.Extended = events.ExtendedPinned
	}
	obs, state, err := observation.Card(ctx, c.f, pin, cfg.force)
	if err != nil {
		return Decision{}, c.fetchError(agentURL, cfg.cardURL, obs, err)
	}
	d := Decision{
		AgentURL: agentURL, CardURL: obs.CardURL, Extended: state, FromLease: obs.FromLease, Card: obs.Card,
		Live:  events.CardRef{Digest: obs.Digest, Fingerprint: obs.Fingerprint, ETag: obs.ETag, FetchedAt: obs.FetchedAt.UTC()},
		Unmet: Unsatisfied(obs.Card, requirements),
	}
	if pinned != nil {
		pin.Digest, pin.Fingerprint = pinnedRef.Digest, pinnedRef.Fingerprint
		// Verified as a worker verifies a client's card.
		pin.Signatures, pin.SignaturesKnown = c.f.VerifyAt(ctx, cmp.Or(cfg.cardURL, agentURL), pinned.Raw), true
		live := observation.Of(obs, c.now())
		if pin.LostExtended(state) {
			// The public card judges the task, as the worker's pin again.
			pin, pinned = pin.OnPublicCard(live), nil
		}
		dec := task.Decide(pin, pinned, live, nil, task.Policy{RequireSigned: c.signed, Posture: cfg.posture})
		d.Pinned, d.Findings, d.Verdict = pinnedRef, dec.Findings, &dec.Verdict
	}
	return d, nil
}

func (c *Checker) fetchError(agentURL, cardURL string, obs fetcher.Observation, err error) error {
	if errors.Is(err, fetcher.ErrStore) {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	ue := &UnreachableError{AgentURL: agentURL, CardURL: cardURL, Reason: fetcher.ReasonConnect, Err: err}
	if obs.CardURL != "" {
		ue.CardURL = obs.CardURL
	}
	var fe *fetcher.FetchError
	if errors.As(err, &fe) {
		ue.Reason, ue.Status = fe.Reason, fe.Status
		if fe.URL != "" {
			ue.CardURL = fe.URL
		}
	} else if errors.Is(err, fetcher.ErrInvalidURL) {
		ue.Reason = fetcher.ReasonInvalidURL
	}
	return ue
}

// pinned resolves the pinned card of cfg, nil when none was given.
func (c *Checker) pinned(ctx context.Context, cfg *checkConfig) (*detector.Card, *events.CardRef, error) {
	card := cfg.pinnedCard
	switch {
	case card != nil:
	case cfg.pinnedRaw != nil:
		parsed, err := detector.Parse(cfg.pinnedRaw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidPinned, err)
		}
		card = parsed
	case cfg.pinnedDigest != "":
		if c.cards == nil {
			return nil, nil, fmt.Errorf("%w: %s (no card store configured)", ErrUnknownPinned, cfg.pinnedDigest)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := c.cards.Get(sctx, cfg.pinnedDigest)
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidDigest):
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnknownPinned, cfg.pinnedDigest, err)
		case err != nil:
			return nil, nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		parsed, err := detector.Parse(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: stored body of %s: %w", ErrInvalidPinned, cfg.pinnedDigest, err)
		}
		card = parsed
	default:
		return nil, nil, nil
	}
	digest, err := detector.Digest(card.Raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidPinned, err)
	}
	return card, &events.CardRef{Digest: digest, Fingerprint: detector.Fingerprint(card)}, nil
}
