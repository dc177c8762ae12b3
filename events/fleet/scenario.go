package fleet

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// Outcome is what carddrift should report for one task: a card.drift with
// a verdict action, no card.drift (OutcomeNone), or card.unreachable and
// never a card.drift (OutcomeUnreachable).
type Outcome string

// Outcomes.
const (
	OutcomeNone        Outcome = "none"
	OutcomeContinue    Outcome = Outcome(detector.Continue)
	OutcomeReplan      Outcome = Outcome(detector.Replan)
	OutcomeAbort       Outcome = Outcome(detector.Abort)
	OutcomeUnreachable Outcome = "unreachable"
)

// Action returns the verdict action of a card.drift outcome.
func (o Outcome) Action() (detector.Action, bool) {
	switch o {
	case OutcomeContinue, OutcomeReplan, OutcomeAbort:
		return detector.Action(o), true
	}
	return "", false
}

// LabelBase is the card an assignment serves from its start; LabelDown, in
// an Expectation's To, "the live fetch fails".
const (
	LabelBase = "base"
	LabelDown = "down"
)

// Control is the scenario of the control group: no change, no drift.
const Control = "control"

// CardVersion is one card an assignment serves at some time. Plannable names
// the profiles a client could plan against it; traffic submits only these.
type CardVersion struct {
	Label     string
	Raw       []byte
	Digest    string
	Plannable []string
}

// Step is one change of what an agent serves, At after the schedule starts:
// Card is the label served from At on, or Replicas the labels served in turn
// (a rolling deploy), and Outage the agent's availability from At on.
type Step struct {
	At       time.Duration
	Card     string
	Replicas []string
	Outage   Outage
}

// Profile is a kind of task a client plans against an agent.
type Profile struct {
	Name string
	Task detector.Requirements
}

// Expectation is what a task of one profile planned against card From
// should get when a capability-dependent transition meets card To: the
// outcome, rule ids the card.drift must find, and the skill id a replan
// must name (in a scenario's table a skill role, bound when applied).
type Expectation struct {
	Profile     string
	From, To    string
	Outcome     Outcome
	Rules       []string
	ReplanSkill string
}

// Assignment is one scenario instance on one agent: the cards it serves
// (Cards[0] is LabelBase), when (Steps, in time order, from LabelBase at
// 0), the profiles to drive and the verdict each should get. It is data.
type Assignment struct {
	Agent        *Agent
	AgentID      string
	AgentURL     string
	CardURL      string
	Scenario     string
	Cards        []CardVersion
	Steps        []Step
	Profiles     []Profile
	Expectations []Expectation
}

func (as *Assignment) Version(label string) (CardVersion, bool) {
	return find(as.Cards, func(c CardVersion) bool { return c.Label == label })
}

func (as *Assignment) Card(label string) []byte {
	c, _ := as.Version(label)
	return c.Raw
}

func (as *Assignment) LabelOf(digest string) string {
	c, _ := find(as.Cards, func(c CardVersion) bool { return c.Digest == digest })
	return c.Label
}

func (as *Assignment) Profile(name string) (Profile, bool) {
	return find(as.Profiles, func(p Profile) bool { return p.Name == name })
}

func (as *Assignment) Plannable(label string) []Profile {
	c, _ := as.Version(label)
	var out []Profile
	for _, name := range c.Plannable {
		if p, ok := as.Profile(name); ok {
			out = append(out, p)
		}
	}
	return out
}

// Expect returns what a task of profile planned against card from should
// get when it meets card to (equal labels: OutcomeNone); false when the
// scenario does not say.
func (as *Assignment) Expect(profile, from, to string) (Expectation, bool) {
	if e, ok := find(as.Expectations, func(e Expectation) bool { return e.Profile == profile && e.From == from && e.To == to }); ok {
		return e, true
	}
	if from == to {
		return Expectation{Profile: profile, From: from, To: to, Outcome: OutcomeNone}, true
	}
	return Expectation{}, false
}

// ExpectDigests is Expect for a card.drift's pinned and live digests.
func (as *Assignment) ExpectDigests(profile, pinnedDigest, liveDigest string) (Expectation, bool) {
	from, to := as.LabelOf(pinnedDigest), as.LabelOf(liveDigest)
	if from == "" || to == "" {
		return Expectation{}, false
	}
	return as.Expect(profile, from, to)
}

// LiveAt returns the labels served at offset d from the start ([LabelDown]
// while the agent is down, several during a rolling deploy).
func (as *Assignment) LiveAt(d time.Duration) []string {
	var body []string
	outage := Up
	for _, s := range as.Steps {
		if s.At > d {
			break
		}
		if len(s.Replicas) > 0 {
			body = s.Replicas
		} else if s.Card != "" {
			body = []string{s.Card}
		}
		outage = s.Outage
	}
	if outage != Up {
		return []string{LabelDown}
	}
	return slices.Clone(body)
}

// Alternates reports whether what the schedule serves can be split brain
// (detector.Replicas): several cards at once, or A→B→A→B within window.
func (as *Assignment) Alternates(window time.Duration) bool {
	var r detector.Replicas
	for _, s := range as.Steps {
		cur := as.LiveAt(s.At)
		if len(cur) > 1 {
			return true
		}
		if len(cur) == 1 && cur[0] != LabelDown {
			at := time.Unix(0, 0).Add(s.At)
			r = r.Observe(cur[0], at, window)
			if r.Disagree(at, window) {
				return true
			}
		}
	}
	return false
}

// SplitAt returns when the schedule's replicas serve several cards at once
// and for how long (-1: to the end; zero when they never do).
func (as *Assignment) SplitAt() (at, length time.Duration) {
	for i, s := range as.Steps {
		if len(s.Replicas) < 2 {
			continue
		}
		end := time.Duration(-1)
		if i+1 < len(as.Steps) {
			end = as.Steps[i+1].At
		}
		return s.At, end - s.At
	}
	return 0, 0
}

// Scenario is a named, seeded schedule of card changes with the task
// profiles to drive and the verdict table detector.Evaluate must follow.
// build derives its cards and steps from an agent's base card; prefers says
// which agents suit it best.
type Scenario struct {
	Name        string
	Description string
	Profiles    []ProfileSpec
	Expect      []Expectation
	build       func(b *builder) error
	prefers     func(*Agent) bool
}

// ProfileSpec describes a Profile by skill role. Secured authenticates with
// the base card's schemes; OutputMode requires the skill's first output mode.
type ProfileSpec struct {
	Name       string
	Skill      string
	Streaming  bool
	Secured    bool
	OutputMode bool
	Posture    detector.Posture
	Idempotent bool
}

// Skill roles of ProfileSpec: RolePrimary is the skill the scenario changes
// (or one every card keeps, for card-wide changes), RoleOther another it
// leaves alone, RoleAdded a skill only the changed card offers, RoleRenamed
// the new id of RolePrimary in a card that renames it.
const (
	RolePrimary = "primary"
	RoleOther   = "other"
	RoleAdded   = "added"
	RoleRenamed = "renamed"
)

type builder struct {
	rng   *rand.Rand
	d     time.Duration
	base  *editor
	cards map[string]*editor
	order []string
	steps []Step
	roles map[string]string
}

func (b *builder) card(label string, e *editor) {
	if _, dup := b.cards[label]; !dup {
		b.order = append(b.order, label)
	}
	b.cards[label] = e
}

// at returns a random offset in [lo, hi) fractions of the duration.
func (b *builder) at(lo, hi float64) time.Duration {
	f := lo + (hi-lo)*b.rng.Float64()
	return time.Duration(f * float64(b.d)).Truncate(time.Millisecond)
}

// change records the base card and the changed card e under label, which is
// served from a random offset in the second quarter of the run on.
func (b *builder) change(label string, e *editor) {
	b.card(LabelBase, b.base)
	b.card(label, e)
	b.steps = append(b.steps, Step{At: b.at(0.25, 0.45), Card: label})
}

// twoSkills gives a one-skill base card a second, and picks primary and other.
func (b *builder) twoSkills() {
	b.base.ensureSkills(2)
	b.pick()
}

// pick chooses primary and, when the card has more than one skill, other.
func (b *builder) pick() {
	ids := b.base.skillIDs()
	if len(ids) == 0 {
		return
	}
	i := b.rng.IntN(len(ids))
	b.roles[RolePrimary] = ids[i]
	if len(ids) > 1 {
		b.roles[RoleOther] = ids[(i+1+b.rng.IntN(len(ids)-1))%len(ids)]
	}
}

// instantiate applies the scenario to a base card of generation gen for a
// schedule of duration d, drawing every choice (which skill, when) from rng.
func (s Scenario) instantiate(rng *rand.Rand, gen Generation, base []byte, d time.Duration) (Assignment, error) {
	e, err := newEditor(base, gen)
	if err != nil {
		return Assignment{}, err
	}
	b := &builder{rng: rng, d: d, base: e, cards: map[string]*editor{}, roles: map[string]string{}}
	if s.build != nil {
		if err := s.build(b); err != nil {
			return Assignment{}, err
		}
	}
	b.card(LabelBase, b.base)
	if b.roles[RolePrimary] == "" {
		b.pick()
	}
	b.steps = append([]Step{{At: 0, Card: LabelBase}}, b.steps...)
	slices.SortStableFunc(b.steps, func(x, y Step) int { return int(x.At - y.At) })

	as := Assignment{Scenario: s.Name, Steps: b.steps}
	parsed := map[string]*detector.Card{}
	for _, label := range b.order {
		raw := b.cards[label].bytes()
		c, err := detector.Parse(raw)
		if err != nil {
			return Assignment{}, fmt.Errorf("card %q does not parse: %w", label, err)
		}
		dg, err := detector.Digest(raw)
		if err != nil {
			return Assignment{}, fmt.Errorf("card %q: %w", label, err)
		}
		parsed[label] = c
		as.Cards = append(as.Cards, CardVersion{Label: label, Raw: raw, Digest: dg})
	}
	for _, ps := range s.Profiles {
		if p, ok := ps.bind(b.roles, parsed); ok {
			as.Profiles = append(as.Profiles, p)
		}
	}
	for i := range as.Cards {
		for _, p := range as.Profiles {
			if plannable(p.Task, parsed[as.Cards[i].Label]) {
				as.Cards[i].Plannable = append(as.Cards[i].Plannable, p.Name)
			}
		}
	}
	for _, e := range s.Expect {
		if from, _ := as.Version(e.From); slices.Contains(from.Plannable, e.Profile) {
			e.Rules = slices.Clone(e.Rules)
			e.ReplanSkill = b.roles[e.ReplanSkill]
			as.Expectations = append(as.Expectations, e)
		}
	}
	return as, nil
}

// bind resolves a profile spec against the base card (for RoleAdded's output
// mode, the first card that offers it); false when the role is unbound.
func (ps ProfileSpec) bind(roles map[string]string, cards map[string]*detector.Card) (Profile, bool) {
	id := roles[ps.Skill]
	if id == "" {
		return Profile{}, false
	}
	req := detector.Requirements{
		SkillID:    id,
		Streaming:  ps.Streaming,
		Posture:    cmp.Or(ps.Posture, detector.FailClosed),
		Idempotent: ps.Idempotent,
	}
	base := cards[LabelBase]
	if ps.Secured && len(base.SecurityRequirements) > 0 {
		for name := range base.SecurityRequirements[0] {
			req.Security = append(req.Security, name)
		}
		slices.Sort(req.Security)
	}
	if ps.OutputMode {
		home := base
		if _, ok := base.Skill(id); !ok {
			for _, c := range cards {
				if _, ok := c.Skill(id); ok {
					home = c
					break
				}
			}
		}
		if sk, ok := home.Skill(id); ok {
			if modes := home.OutputModes(sk); len(modes) > 0 {
				req.OutputModes = []string{modes[0]}
			}
		}
	}
	return Profile{Name: ps.Name, Task: req}, true
}

// plannable reports whether a client could plan task against card c.
func plannable(task detector.Requirements, c *detector.Card) bool {
	sk, ok := c.Skill(task.SkillID)
	if !ok || task.Streaming && !c.Capabilities.Streaming {
		return false
	}
	for _, s := range task.Security {
		if _, ok := c.SecuritySchemes[s]; !ok {
			return false
		}
	}
	for _, m := range task.OutputModes {
		if !detector.Covers(c.OutputModes(sk), m) {
			return false
		}
	}
	return true
}

// ScenarioNames returns the names of the scenarios, in a fixed order.
func ScenarioNames() []string {
	out := make([]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.Name
	}
	return out
}

// LookupScenario returns (a copy of) the scenario with the given name.
func LookupScenario(name string) (Scenario, bool) {
	s, ok := find(scenarios, func(s Scenario) bool { return s.Name == name })
	s.Profiles = slices.Clone(s.Profiles)
	s.Expect = slices.Clone(s.Expect)
	for i := range s.Expect {
		s.Expect[i].Rules = slices.Clone(s.Expect[i].Rules)
	}
	return s, ok
}

func find[T any](s []T, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(s, match); i >= 0 {
		return s[i], true
	}
	var zero T
	return zero, false
}

// ParseScenarios reads a --scenarios list ("" or "all": every scenario);
// an unknown name is an error wrapping ErrUnknownScenario.
func ParseScenarios(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return ScenarioNames(), nil
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || slices.Contains(out, n) {
			continue
		}
		if _, ok := LookupScenario(n); !ok {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownScenario, n, strings.Join(ScenarioNames(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}
