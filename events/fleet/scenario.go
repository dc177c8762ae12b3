package fleet

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// Outcome is what carddrift should report for one task: a card.drift verdict
// action, no card.drift at all, or card.unreachable.
type Outcome string

// Outcomes.
const (
	// OutcomeNone: no card.drift (the live card is the pinned one).
	OutcomeNone Outcome = "none"
	// OutcomeContinue, OutcomeReplan and OutcomeAbort: a card.drift whose
	// verdict action is continue, replan or abort.
	OutcomeContinue Outcome = Outcome(detector.Continue)
	OutcomeReplan   Outcome = Outcome(detector.Replan)
	OutcomeAbort    Outcome = Outcome(detector.Abort)
	// OutcomeUnreachable: card.unreachable and never a card.drift; the pin
	// stays as it was.
	OutcomeUnreachable Outcome = "unreachable"
)

// Action returns the verdict action of a card.drift outcome, and false for
// OutcomeNone and OutcomeUnreachable.
func (o Outcome) Action() (detector.Action, bool) {
	switch o {
	case OutcomeContinue, OutcomeReplan, OutcomeAbort:
		return detector.Action(o), true
	}
	return "", false
}

// Labels with a fixed meaning.
const (
	// LabelBase is the card an assignment serves from its start.
	LabelBase = "base"
	// LabelDown stands for "the live fetch fails" in an Expectation's To.
	LabelDown = "down"
)

// Control is the Scenario of an assignment in the control group: its agent
// serves its base card throughout and no task on it should ever see drift.
const Control = "control"

// CardVersion is one card an assignment serves at some time.
type CardVersion struct {
	Label string `json:"label"`
	Raw   []byte `json:"-"`
	// Digest and Fingerprint are detector.Digest and detector.Fingerprint of
	// Raw: a scorecard maps a pin's or a live card's digest to its label.
	Digest      string `json:"digest"`
	Fingerprint string `json:"fingerprint"`
	// Plannable names the assignment's profiles a client could plan against
	// this card (the skill is offered, streaming, push, security schemes and
	// modes as required). Traffic should submit only these.
	Plannable []string `json:"plannable"`
}

// Step is one change of what an agent serves, At after the schedule starts.
// Card (or Replicas) changes the body; Outage changes availability. A step
// with a Card or Replicas also brings the agent up unless its Outage says
// otherwise.
type Step struct {
	At time.Duration `json:"at"`
	// Card is the label of the card served from At on (ending a rolling
	// deploy).
	Card string `json:"card,omitempty"`
	// Replicas are the labels served alternately from At on, as replicas
	// behind one URL during a rolling deploy.
	Replicas []string `json:"replicas,omitempty"`
	// Outage is the agent's availability from At on.
	Outage Outage `json:"outage"`
	// Note says what the step does, for people.
	Note string `json:"note,omitempty"`
}

// Profile is a kind of task a client plans against an agent: what it
// requires, its posture and whether it is idempotent. Task.Posture is the
// posture to pass to detector.Evaluate.
type Profile struct {
	Name string                `json:"name"`
	Task detector.Requirements `json:"task"`
}

// Expectation is what a task of one profile, planned against the card
// labelled From, should get when a capability-dependent transition meets the
// card labelled To (LabelDown: the agent is unreachable).
type Expectation struct {
	Profile string  `json:"profile"`
	From    string  `json:"from"`
	To      string  `json:"to"`
	Outcome Outcome `json:"outcome"`
	// Rules are rule ids that must be among the findings of the card.drift
	// (detector.Evaluate's findings); there may be more.
	Rules []string `json:"rules,omitempty"`
	// ReplanSkill is the skill id a replan must name (the verdict's
	// replanSkill): the new id of a renamed skill. In a scenario's table it
	// is a skill role (RoleRenamed), bound to the id when the scenario is
	// applied.
	ReplanSkill string `json:"replanSkill,omitempty"`
}

// Assignment is one scenario instance on one agent: the cards it serves,
// when, the task profiles to drive against it and the verdict each should
// get. Its fields are data; it holds no goroutine.
type Assignment struct {
	Agent       *Agent `json:"-"`
	AgentID     string `json:"agent"`
	AgentURL    string `json:"agentUrl"`
	CardURL     string `json:"cardUrl"`
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	// Cards[0] is LabelBase.
	Cards []CardVersion `json:"cards"`
	// Steps are in time order; Steps[0] serves LabelBase at 0.
	Steps        []Step        `json:"steps"`
	Profiles     []Profile     `json:"profiles"`
	Expectations []Expectation `json:"expectations"`
}

// Version returns the card with the given label.
func (as *Assignment) Version(label string) (CardVersion, bool) {
	return find(as.Cards, func(c CardVersion) bool { return c.Label == label })
}

// Card returns the body of the card with the given label, or nil.
func (as *Assignment) Card(label string) []byte {
	c, _ := as.Version(label)
	return c.Raw
}

// LabelOf returns the label of the card with the given digest, or "".
func (as *Assignment) LabelOf(digest string) string {
	c, _ := find(as.Cards, func(c CardVersion) bool { return c.Digest == digest })
	return c.Label
}

// Profile returns the profile with the given name.
func (as *Assignment) Profile(name string) (Profile, bool) {
	return find(as.Profiles, func(p Profile) bool { return p.Name == name })
}

// Plannable returns the profiles a client could plan against the card with
// the given label.
func (as *Assignment) Plannable(label string) []Profile {
	c, ok := as.Version(label)
	if !ok {
		return nil
	}
	var out []Profile
	for _, name := range c.Plannable {
		if p, ok := as.Profile(name); ok {
			out = append(out, p)
		}
	}
	return out
}

// Expect returns what a task of the named profile planned against card from
// should get when it meets card to. Equal labels expect OutcomeNone. It
// reports false when the scenario does not say (a profile not plannable on
// from, or a pair of cards the schedule never serves in that order).
func (as *Assignment) Expect(profile, from, to string) (Expectation, bool) {
	if e, ok := find(as.Expectations, func(e Expectation) bool { return e.Profile == profile && e.From == from && e.To == to }); ok {
		return e, true
	}
	if from == to {
		return Expectation{Profile: profile, From: from, To: to, Outcome: OutcomeNone}, true
	}
	return Expectation{}, false
}

// ExpectDigests is Expect for the digests of a card.drift's pinned and live
// cards (see CardVersion.Digest). It reports false when either digest is not
// one of the assignment's cards.
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

// Drifts returns the offsets of the steps that inject drift: those that
// serve a card the step before did not (a change, a revert, the first
// replica of a new version). Outages are not drift.
func (as *Assignment) Drifts() []time.Duration {
	var out []time.Duration
	var prev []string
	for i, s := range as.Steps {
		cur := as.LiveAt(s.At)
		if i > 0 && !slices.Contains(cur, LabelDown) {
			for _, l := range cur {
				if !slices.Contains(prev, l) {
					out = append(out, s.At)
					break
				}
			}
		}
		if !slices.Contains(cur, LabelDown) {
			prev = cur
		}
	}
	return out
}

// Alternates reports whether what the schedule serves can be split brain
// as carddrift decides it (detector.Replicas): replicas serving several cards
// at once, or single cards that alternate (A→B→A→B) within window. A
// scorecard holds card.inconsistent for an agent whose schedule does not
// alternate to be false.
func (as *Assignment) Alternates(window time.Duration) bool {
	var r detector.Replicas
	for _, s := range as.Steps {
		cur := as.LiveAt(s.At)
		if len(cur) > 1 {
			return true
		}
		if len(cur) == 1 && cur[0] != LabelDown {
			r = r.Observe(cur[0], time.Unix(0, 0).Add(s.At), window)
			if r.Disagree(time.Unix(0, 0).Add(s.At), window) {
				return true
			}
		}
	}
	return false
}

// SplitAt returns when the schedule's replicas serve several cards at once
// and for how long (zero when they never do).
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

// Transition is an ordered pair of cards a task can meet: planned against
// From, a transition at or after At meets To.
type Transition struct {
	From, To string
	At       time.Duration
}

// Transitions returns every (pinned, live) pair of different labels the
// schedule can produce, with the first offset it can occur at: a task
// pinned on any card served up to a step meets each card that step serves.
func (as *Assignment) Transitions() []Transition {
	var out []Transition
	seen := map[[2]string]bool{}
	var earlier []string
	for _, s := range as.Steps {
		cur := as.LiveAt(s.At)
		for _, l := range cur {
			if l != LabelDown && !slices.Contains(earlier, l) {
				earlier = append(earlier, l)
			}
		}
		for _, from := range earlier {
			for _, to := range cur {
				k := [2]string{from, to}
				if from != to && !seen[k] {
					seen[k] = true
					out = append(out, Transition{From: from, To: to, At: s.At})
				}
			}
		}
	}
	return out
}

// Scenario is a named, seeded schedule of card changes with the verdicts it
// must produce. Scenarios are data (see Scenarios); Apply turns one into an
// Assignment for one agent.
type Scenario struct {
	Name        string
	Description string
	// Drift is false for scenarios that change no card (agent-down).
	Drift bool
	// Profiles are the task kinds to drive against the scenario's agent.
	Profiles []ProfileSpec
	// Expect is the verdict table: for each (from, to, profile), the outcome
	// and rule ids detector.Evaluate must give. Rows whose profile is not
	// plannable on from are dropped when a scenario is applied.
	Expect []Expectation

	// build derives the scenario's cards and steps from an agent's base card.
	build func(b *builder) error
	// prefers, when set, says which agents suit the scenario best
	// (Schedule gives them to it first).
	prefers func(*Agent) bool
}

// ProfileSpec describes a Profile by role: Skill is a skill role the
// scenario binds to a skill id of its agent's card (RolePrimary, RoleOther,
// RoleAdded).
type ProfileSpec struct {
	Name       string
	Skill      string
	Streaming  bool
	Push       bool
	Secured    bool // authenticates with the base card's security schemes
	OutputMode bool // requires the first output mode of the skill on the base card
	Posture    detector.Posture
	Idempotent bool
}

// Skill roles of ProfileSpec.
const (
	// RolePrimary is the skill the scenario changes (or a skill every card
	// version keeps, for card-wide changes).
	RolePrimary = "primary"
	// RoleOther is another skill, which the scenario leaves alone.
	RoleOther = "other"
	// RoleAdded is a skill only the changed card offers.
	RoleAdded = "added"
	// RoleRenamed is the new id of RolePrimary in a card that renames it.
	RoleRenamed = "renamed"
)

// Apply instantiates the scenario on agent a for a schedule of the given
// duration, drawing every choice (which skill, when) from rng. a must have
// been started (its card carries its address).
func (s Scenario) Apply(rng *rand.Rand, a *Agent, duration time.Duration) (Assignment, error) {
	if a.host == "" {
		return Assignment{}, fmt.Errorf("%w: agent %s", ErrNotStarted, a.id)
	}
	as, err := s.instantiate(rng, a.tmpl.Gen, a.base, duration)
	if err != nil {
		return Assignment{}, fmt.Errorf("fleet: scenario %s on %s (%s): %w", s.Name, a.id, a.tmpl.Name, err)
	}
	as.Agent, as.AgentID, as.AgentURL, as.CardURL = a, a.id, a.URL(), a.CardURL()
	return as, nil
}

// builder is the state of one scenario instantiation.
type builder struct {
	rng   *rand.Rand
	d     time.Duration
	base  *editor
	cards map[string]*editor
	order []string
	steps []Step
	roles map[string]string
}

// card records a card version under label.
func (b *builder) card(label string, e *editor) {
	if _, dup := b.cards[label]; !dup {
		b.order = append(b.order, label)
	}
	b.cards[label] = e
}

// at returns a random offset in [lo, hi) fractions of the duration, to the
// millisecond.
func (b *builder) at(lo, hi float64) time.Duration {
	f := lo + (hi-lo)*b.rng.Float64()
	return time.Duration(f * float64(b.d)).Truncate(time.Millisecond)
}

// step appends a step.
func (b *builder) step(s Step) { b.steps = append(b.steps, s) }

// change records the base card and the changed card e under label, which is
// served from a random offset in the second quarter of the run on.
func (b *builder) change(label string, e *editor, note string) {
	b.card(LabelBase, b.base)
	b.card(label, e)
	b.step(Step{At: b.at(0.25, 0.45), Card: label, Note: note})
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

func (s Scenario) instantiate(rng *rand.Rand, gen Generation, base []byte, d time.Duration) (Assignment, error) {
	if d <= 0 {
		return Assignment{}, fmt.Errorf("%w: duration %v", ErrInvalidOptions, d)
	}
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
	if _, ok := b.cards[LabelBase]; !ok {
		b.card(LabelBase, b.base)
	}
	if b.roles[RolePrimary] == "" {
		b.pick()
	}
	if len(b.steps) == 0 || b.steps[0].At != 0 || b.steps[0].Card != LabelBase {
		b.steps = append([]Step{{At: 0, Card: LabelBase, Note: "serve the base card"}}, b.steps...)
	}
	slices.SortStableFunc(b.steps, func(x, y Step) int { return int(x.At - y.At) })

	as := Assignment{Scenario: s.Name, Description: s.Description, Steps: b.steps}
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
		as.Cards = append(as.Cards, CardVersion{Label: label, Raw: raw, Digest: dg, Fingerprint: detector.Fingerprint(c)})
	}
	for _, st := range as.Steps {
		for _, l := range append([]string{st.Card}, st.Replicas...) {
			if l != "" && parsed[l] == nil {
				return Assignment{}, fmt.Errorf("%w: step at %v serves %q", ErrUnknownLabel, st.At, l)
			}
		}
	}

	baseCard := parsed[LabelBase]
	for _, ps := range s.Profiles {
		p, ok := ps.bind(b.roles, baseCard, parsed)
		if ok {
			as.Profiles = append(as.Profiles, p)
		}
	}
	for i := range as.Cards {
		c := parsed[as.Cards[i].Label]
		for _, p := range as.Profiles {
			if plannable(p.Task, c) {
				as.Cards[i].Plannable = append(as.Cards[i].Plannable, p.Name)
			}
		}
	}
	for _, e := range s.Expect {
		if _, ok := as.Profile(e.Profile); !ok {
			continue
		}
		from, ok := as.Version(e.From)
		if !ok || !slices.Contains(from.Plannable, e.Profile) {
			continue
		}
		e.Rules = slices.Clone(e.Rules)
		if e.ReplanSkill != "" {
			e.ReplanSkill = b.roles[e.ReplanSkill]
		}
		as.Expectations = append(as.Expectations, e)
	}
	return as, nil
}

// bind resolves a profile spec against the base card (or, for RoleAdded,
// the first card that offers the skill). It reports false when the role is
// unbound on this agent.
func (ps ProfileSpec) bind(roles map[string]string, base *detector.Card, cards map[string]*detector.Card) (Profile, bool) {
	id := roles[ps.Skill]
	if id == "" {
		return Profile{}, false
	}
	posture := ps.Posture
	if posture == "" {
		posture = detector.FailClosed
	}
	req := detector.Requirements{
		SkillID:           id,
		Streaming:         ps.Streaming,
		PushNotifications: ps.Push,
		Posture:           posture,
		Idempotent:        ps.Idempotent,
	}
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
	if !ok {
		return false
	}
	if task.Streaming && !c.Capabilities.Streaming {
		return false
	}
	if task.PushNotifications && !c.Capabilities.PushNotifications {
		return false
	}
	for _, s := range task.Security {
		if _, ok := c.SecuritySchemes[s]; !ok {
			return false
		}
	}
	for _, m := range task.InputModes {
		if !detector.Covers(c.InputModes(sk), m) {
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

// Scenarios returns every scenario, in a fixed order. The scenarios are
// copies: changing them does not change the library.
func Scenarios() []Scenario {
	out := make([]Scenario, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.clone()
	}
	return out
}

func (s Scenario) clone() Scenario {
	s.Profiles = slices.Clone(s.Profiles)
	s.Expect = slices.Clone(s.Expect)
	for i := range s.Expect {
		s.Expect[i].Rules = slices.Clone(s.Expect[i].Rules)
	}
	return s
}

// ScenarioNames returns the names of Scenarios, in the same order.
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
	return s.clone(), ok
}

// find returns the first element of s that match accepts.
func find[T any](s []T, match func(T) bool) (T, bool) {
	if i := slices.IndexFunc(s, match); i >= 0 {
		return s[i], true
	}
	var zero T
	return zero, false
}

// ParseScenarios reads a comma-separated list of scenario names ("" or
// "all" for every scenario), as a --scenarios flag gives it. It returns an
// error wrapping ErrUnknownScenario that lists the known names.
func ParseScenarios(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return ScenarioNames(), nil
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := LookupScenario(n); !ok {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownScenario, n, strings.Join(ScenarioNames(), ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}
