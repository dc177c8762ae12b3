package impact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// Source is where Assess reads: the pins (in one pass) and the card bodies.
type Source struct {
	Pins  store.Scanner[task.Pin]
	Cards store.Cards
}

// Options adjust an assessment. The zero value judges as a worker with its
// defaults does.
type Options struct {
	// RequireSigned judges as carddrift serve --require-signed-cards does.
	RequireSigned bool
	// Signatures are what verifying the proposed card's signatures found
	// (nil: unsigned, or not verified).
	Signatures []detector.Signature
	// Extended says the proposed card is the agent's authenticated
	// extended card (impact --extended): it judges the tasks pinned on the
	// extended card, and the others are Skipped. Without it the tasks
	// pinned on the extended card are Skipped.
	Extended bool
	// Workers bounds the goroutines that judge pins (default GOMAXPROCS).
	Workers int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Finding is one finding of a task's verdict.
type Finding struct {
	Rule     string            `json:"rule"`
	Severity detector.Severity `json:"severity"`
	Touches  bool              `json:"touches"`
}

// Task is what the proposed card would do to one task: the findings of its
// card.drift (none when the worker would publish none).
type Task struct {
	TaskID   string           `json:"taskId"`
	Action   detector.Action  `json:"action"`
	Posture  detector.Posture `json:"posture"`
	Findings []Finding        `json:"findings"`

	Reason      string `json:"-"`
	ReplanSkill string `json:"-"`
	Pinned      string `json:"-"` // the digest the task is pinned to
	Skill       string `json:"-"`
}

// Counts are the tasks by action (detector.Counts, the one type of it).
type Counts = detector.Counts

// Proposed names the proposed card by its digest.
type Proposed struct {
	Digest string `json:"digest"`
}

// Report is the answer: carddrift impact --json prints it as it is.
type Report struct {
	AgentURL string   `json:"agentUrl"`
	Card     Proposed `json:"card"`
	// Tasks are the agent's live pins, sorted by task id.
	Tasks  []Task `json:"tasks"`
	Counts Counts `json:"counts"`
	// Skipped are the agent's live pins the proposed card does not judge
	// (Options.Extended), sorted by task id.
	Skipped  []Skipped `json:"-"`
	Extended bool      `json:"-"`
}

// Skipped is a live pin the proposed card is not judged against, and why.
type Skipped struct {
	TaskID string
	Reason string
}

// Why a pin is skipped.
const (
	SkipExtendedPin = "pinned on the extended card: a public card does not judge it (--extended for an extended card)"
	SkipPublicPin   = "pinned on the public card: an extended card does not judge it"
)

// skip says why a proposed card does not judge p, or "" when it does.
func skip(p task.Pin, extended bool) string {
	switch {
	case p.UsesExtended() && !extended:
		return SkipExtendedPin
	case !p.UsesExtended() && extended:
		return SkipPublicPin
	}
	return ""
}

// ErrNotACard is returned (wrapped) when the proposed card is not a card.
var ErrNotACard = errors.New("impact: the proposed card is not a card")

// Assess evaluates the proposed card raw for the agent at agentURL (any URL
// of its host) against every live pin on it that the card would judge. A
// pending pin would be pinned to it: it continues. Errors: ErrNotACard, the
// stores' errors (pins that do not decode: store.ErrCorrupt, with the
// report of the others).
func Assess(ctx context.Context, src Source, agentURL string, raw []byte, opts Options) (*Report, error) {
	host, err := events.AgentHost(agentURL)
	if err != nil {
		return nil, err
	}
	live, err := detector.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotACard, err)
	}
	digest, err := detector.Digest(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotACard, err)
	}
	opts.Now = defaults.Clock(opts.Now)
	opts.Workers = defaults.Positive(opts.Workers, runtime.GOMAXPROCS(0))
	now := opts.Now()
	obs := task.Observation{Digest: digest, Fingerprint: detector.Fingerprint(live), Card: live,
		FetchedAt: now, VerifiedAt: now, Signatures: opts.Signatures}
	meta := task.Meta{Time: now, Now: now, Policy: task.Policy{RequireSigned: opts.RequireSigned}}

	var pins []task.Pin
	var skipped []Skipped
	scanErr := src.Pins.Scan(ctx, func(p task.Pin, _ uint64) error {
		if h, err := events.AgentHost(p.AgentURL); err != nil || h != host {
			return nil
		}
		if why := skip(p, opts.Extended); why != "" {
			skipped = append(skipped, Skipped{TaskID: p.TaskID, Reason: why})
			return nil
		}
		pins = append(pins, p)
		return nil
	})
	if scanErr != nil && !errors.Is(scanErr, store.ErrCorrupt) {
		return nil, scanErr
	}
	bodies, err := loadBodies(ctx, src.Cards, pins)
	if err != nil {
		return nil, err
	}

	slices.SortFunc(skipped, func(a, b Skipped) int { return cmp.Compare(a.TaskID, b.TaskID) })
	rep := &Report{AgentURL: agentURL, Card: Proposed{Digest: digest}, Tasks: make([]Task, len(pins)), Skipped: skipped,
		Extended: opts.Extended}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(opts.Workers, max(len(pins), 1)) {
		wg.Go(func() {
			for i := range next {
				p := pins[i]
				o := obs
				o.CardURL = p.CardURL
				rep.Tasks[i] = judge(p, bodies[p.Digest], o, meta)
			}
		})
	}
	for i := range pins {
		next <- i
	}
	close(next)
	wg.Wait()
	slices.SortFunc(rep.Tasks, func(a, b Task) int { return cmp.Compare(a.TaskID, b.TaskID) })
	for _, t := range rep.Tasks {
		rep.Counts.Add(t.Action)
	}
	return rep, scanErr
}

// judge asks the task core about one pin.
func judge(p task.Pin, pinned *detector.Card, obs task.Observation, m task.Meta) Task {
	posture := p.Requirements.Posture
	if posture == "" {
		posture = detector.FailClosed
	}
	t := Task{TaskID: p.TaskID, Action: detector.Continue, Posture: posture, Findings: []Finding{},
		Pinned: p.Digest, Skill: p.Requirements.SkillID, Reason: "no drift"}
	findings, v, drift := task.Assess(p, pinned, obs, m)
	switch {
	case p.Pending():
		t.Reason = "no card pinned yet: the proposed card would be its pin"
	case drift:
		t.Action, t.Posture, t.Reason, t.ReplanSkill = v.Action, v.Posture, v.Reason, v.ReplanSkill
		for _, f := range findings {
			t.Findings = append(t.Findings, Finding{Rule: f.Rule, Severity: f.Severity, Touches: f.Touches})
		}
	case p.Digest != obs.Digest:
		t.Reason = "another form of the pinned card: no finding"
	}
	return t
}

// loadBodies parses the stored body of every pinned digest once (nil: never
// stored).
func loadBodies(ctx context.Context, cards store.Cards, pins []task.Pin) (map[string]*detector.Card, error) {
	out := map[string]*detector.Card{}
	for _, p := range pins {
		if p.Pending() {
			continue
		}
		if _, done := out[p.Digest]; done {
			continue
		}
		raw, err := cards.Get(ctx, p.Digest)
		switch {
		case errors.Is(err, store.ErrNotFound):
			out[p.Digest] = nil
			continue
		case err != nil:
			return nil, err
		}
		c, err := detector.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("impact: stored card %s: %w", p.Digest, err)
		}
		out[p.Digest] = c
	}
	return out, nil
}
