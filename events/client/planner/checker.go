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

// Conditions returned by this package. Test with errors.Is.
var (
	// ErrInvalidOptions is returned (wrapped) by Subscribe and NewChecker
	// for options they cannot use.
	ErrInvalidOptions = errors.New("planner: invalid options")
	// ErrUnreachable is matched by the *UnreachableError Check returns when
	// the live card could not be read.
	ErrUnreachable = errors.New("planner: live card unreachable")
	// ErrInvalidPinned is returned (wrapped) by Check when the pinned card
	// does not parse.
	ErrInvalidPinned = errors.New("planner: pinned card does not parse")
	// ErrUnknownPinned is returned (wrapped) by Check when WithPinnedDigest
	// names a digest whose body is not in CheckerOptions.Cards.
	ErrUnknownPinned = errors.New("planner: pinned card body unknown")
	// ErrStore is returned (wrapped) by Check when a store failed (with
	// fetcher.ErrStore when the fetcher's did). Transient.
	ErrStore = errors.New("planner: store failed")
)

// UnreachableError is returned by Check when the live card could not be read.
// It matches ErrUnreachable and, through Err, the fetcher's sentinels.
type UnreachableError struct {
	AgentURL, CardURL string         // CardURL: the (first) URL that failed
	Reason            fetcher.Reason // as a worker's card.unreachable
	Status            int            // the HTTP status, if one was received
	Err               error          // a *fetcher.FetchError
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("planner: card of %s unreachable (%s)", e.AgentURL, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrUnreachable and the underlying error.
func (e *UnreachableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnreachable}
	}
	return []error{ErrUnreachable, e.Err}
}

// CheckerOptions configure a Checker. Give it the workers' lease and card
// stores, so that a check inside a fresh lease costs no fetch.
type CheckerOptions struct {
	// Fetcher, if set, is used as is; the caller owns it.
	Fetcher *fetcher.Fetcher
	// Fetch configures the Checker's own fetcher otherwise (Close closes it).
	Fetch fetcher.Options
	// Cards resolves WithPinnedDigest to a card body. Default Fetch.Cards.
	Cards store.Cards
	// RequireSigned judges as carddrift serve --require-signed-cards does.
	RequireSigned bool
	// Now is the clock split brain is judged at (default time.Now).
	Now func() time.Time
}

// Checker answers, before a planner submits (or re-submits) a task, whether
// the live card of an agent still satisfies it. Safe for concurrent use;
// Close it when done.
type Checker struct {
	f      *fetcher.Fetcher
	cards  store.Cards
	signed bool
	now    func() time.Time
	close  func() error // the own fetcher's Close, once
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
		c.f, c.close = f, sync.OnceValue(f.Close)
	}
	return c, nil
}

// Close closes the Checker's own fetcher (not one passed in
// CheckerOptions.Fetcher). Safe to call twice.
func (c *Checker) Close() error {
	if c.close == nil {
		return nil
	}
	return c.close()
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

// WithPinned gives the card the planner planned against: Check then also
// judges the task (Decision.Verdict).
func WithPinned(raw []byte) CheckOption {
	return func(c *checkConfig) { c.pinnedRaw = raw }
}

// WithPinnedCard is WithPinned for a card already parsed with
// detector.Parse.
func WithPinnedCard(card *detector.Card) CheckOption {
	return func(c *checkConfig) { c.pinnedCard = card }
}

// WithPinnedDigest names the planned-against card by digest, read from
// CheckerOptions.Cards (ErrUnknownPinned if it is not there).
func WithPinnedDigest(digest string) CheckOption {
	return func(c *checkConfig) { c.pinnedDigest = digest }
}

// WithCardURL checks the card at this URL instead of the well-known one.
func WithCardURL(cardURL string) CheckOption {
	return func(c *checkConfig) { c.cardURL = cardURL }
}

// WithForce fetches the card, bypassing the shared lease and the ETag.
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
	AgentURL, CardURL string // CardURL: the URL that answered
	// Extended is, for a task on the extended card, which card answered,
	// as a worker's card.pinned says it; "" for any other task.
	Extended  string
	Live      events.CardRef
	FromLease bool // a fresh shared lease answered
	// Card is the live card (read-only, shared); submit Card.Raw when
	// re-planning against it.
	Card  *detector.Card
	Unmet []detector.Unmet

	// Pinned, Findings and Verdict are set when a pinned card was given:
	// the verdict as a worker would judge it (on the public card alone
	// when the extended card is unavailable).
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

// Check reads the live card of agentURL as a worker does (the extended
// card for a task on it, given a credential) and tells whether it
// satisfies requirements; with a pinned card it also judges the task.
//
// Errors: *UnreachableError when the live card cannot be read;
// ErrInvalidPinned, ErrUnknownPinned for an unusable pinned card; ErrStore
// (transient). No error and no Decision repeats a credential.
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
		pin.Extended = events.ExtendedPinned // it was planned on it
	}
	obs, state, err := observation.Card(ctx, c.f, pin, cfg.force)
	if err != nil {
		return Decision{}, c.fetchError(agentURL, cfg.cardURL, obs, err)
	}
	d := Decision{
		AgentURL: agentURL, CardURL: obs.CardURL, Extended: state, FromLease: obs.FromLease, Card: obs.Card,
		Live:  events.CardRef{Digest: obs.Digest, Fingerprint: obs.Fingerprint, ETag: obs.ETag, FetchedAt: obs.FetchedAt.UTC()},
		Unmet: detector.Unsatisfied(obs.Card, requirements),
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
	ue := &UnreachableError{AgentURL: agentURL, CardURL: cmp.Or(obs.CardURL, cardURL), Reason: fetcher.ReasonConnect, Err: err}
	var fe *fetcher.FetchError
	if errors.As(err, &fe) {
		ue.Reason, ue.Status, ue.CardURL = fe.Reason, fe.Status, cmp.Or(fe.URL, ue.CardURL)
	} else if errors.Is(err, fetcher.ReasonInvalidURL) {
		ue.Reason = fetcher.ReasonInvalidURL
	}
	return ue
}

// pinned resolves the pinned card of cfg, nil when none was given.
func (c *Checker) pinned(ctx context.Context, cfg *checkConfig) (*detector.Card, *events.CardRef, error) {
	card, raw, what := cfg.pinnedCard, cfg.pinnedRaw, ""
	switch {
	case card != nil, raw != nil:
	case cfg.pinnedDigest != "":
		if c.cards == nil {
			return nil, nil, fmt.Errorf("%w: %s (no card store configured)", ErrUnknownPinned, cfg.pinnedDigest)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		stored, err := c.cards.Get(sctx, cfg.pinnedDigest)
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidDigest):
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrUnknownPinned, cfg.pinnedDigest, err)
		case err != nil:
			return nil, nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		raw, what = stored, "stored body of "+cfg.pinnedDigest+": "
	default:
		return nil, nil, nil
	}
	if card == nil {
		parsed, err := detector.Parse(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s%w", ErrInvalidPinned, what, err)
		}
		card = parsed
	}
	digest, err := detector.Digest(card.Raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidPinned, err)
	}
	return card, &events.CardRef{Digest: digest, Fingerprint: detector.Fingerprint(card)}, nil
}
