package fleet

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// The scenario library. The verdict tables are checked against
// detector.Evaluate on every template card (scenarios_test.go).

// Scenario names.
const (
	PinningRotation         = "pinning-rotation"
	ModesWithoutVersionBump = "modes-without-version-bump"
	SecuritySchemeSwap      = "security-scheme-swap"
	ProtocolVersionChange   = "protocol-version-change"
	InterfaceMove           = "interface-move"
	SkillRemoved            = "skill-removed"
	SkillRenamed            = "skill-renamed"
	DescriptionOnly         = "description-only"
	Flapping                = "flapping"
	RollingDeploy           = "rolling-deploy"
	AgentDown               = "agent-down"
	SplitBrain              = "split-brain"
)

// Profiles shared by several scenarios.
var (
	profilePlain   = ProfileSpec{Name: "plain", Skill: RolePrimary}
	profileStream  = ProfileSpec{Name: "stream", Skill: RolePrimary, Streaming: true}
	profileDegrade = ProfileSpec{Name: "degrade", Skill: RolePrimary, Posture: detector.Degrade, Idempotent: true}
	profileOther   = ProfileSpec{Name: "other", Skill: RoleOther}
)

// row is one line of a verdict table for each of the space-separated
// profiles.
func row(from, to, profiles string, o Outcome, rules ...string) []Expectation {
	var out []Expectation
	for _, p := range strings.Fields(profiles) {
		out = append(out, Expectation{Profile: p, From: from, To: to, Outcome: o, Rules: rules})
	}
	return out
}

// controlScenario is what Schedule gives agents outside every scenario.
var controlScenario = Scenario{
	Name:        Control,
	Description: "control group: the agent serves its card unchanged; no task may see drift",
	Profiles:    []ProfileSpec{profilePlain, profileStream, profileDegrade, profileOther},
}

var scenarios = []Scenario{
	{
		Name: PinningRotation,
		Description: "the pinning write-up: a vendor rotates its card mid-lifecycle — streaming off for maintenance, " +
			"skills [summarize] → [summarize, translate], bearer → oauth2 — without a version bump",
		Profiles: []ProfileSpec{
			{Name: "stream", Skill: RolePrimary, Streaming: true, Secured: true},
			{Name: "degrade", Skill: RolePrimary, Streaming: true, Secured: true, Posture: detector.Degrade, Idempotent: true},
			{Name: "degrade-once", Skill: RolePrimary, Streaming: true, Secured: true, Posture: detector.Degrade},
			{Name: "plain", Skill: RolePrimary, Secured: true},
			{Name: "translate", Skill: RoleAdded},
		},
		Expect: slices.Concat(
			row(LabelBase, "rotated", "stream", OutcomeAbort,
				detector.RuleStreamingDisabled, detector.RuleSkillAdded, detector.RuleSecuritySchemeRemoved,
				detector.RuleSecuritySchemeAdded, detector.RuleSecurityRequirementsChanged,
				detector.RuleContentChangedWithoutVersion),
			row(LabelBase, "rotated", "degrade", OutcomeReplan, detector.RuleStreamingDisabled, detector.RuleSecuritySchemeRemoved),
			row(LabelBase, "rotated", "degrade-once", OutcomeAbort, detector.RuleStreamingDisabled),
			row(LabelBase, "rotated", "plain", OutcomeAbort, detector.RuleSecuritySchemeRemoved),
		),
		build: buildPinningRotation,
	},
	{
		Name: ModesWithoutVersionBump,
		Description: "the fingerprint write-up: one skill's output modes change and the card's version does not " +
			"(agents with a version-derived ETag keep answering 304)",
		Profiles: []ProfileSpec{{Name: "plain", Skill: RolePrimary, OutputMode: true}, {Name: "degrade", Skill: RolePrimary, OutputMode: true, Posture: detector.Degrade, Idempotent: true}, profileOther},
		Expect: slices.Concat(
			row(LabelBase, "modes-changed", "plain", OutcomeAbort, detector.RuleSkillOutputModesChanged, detector.RuleContentChangedWithoutVersion),
			row(LabelBase, "modes-changed", "degrade", OutcomeReplan, detector.RuleSkillOutputModesChanged),
			row(LabelBase, "modes-changed", "other", OutcomeContinue, detector.RuleSkillOutputModesChanged, detector.RuleContentChangedWithoutVersion),
		),
		build:   buildModesWithoutVersionBump,
		prefers: func(a *Agent) bool { return a.Caching() == CacheVersion },
	},
	{
		Name:        SecuritySchemeSwap,
		Description: "the card's security scheme is replaced by one of another kind (bearer, API key, OAuth2); version bumped",
		Profiles: []ProfileSpec{
			{Name: "secured", Skill: RolePrimary, Secured: true},
			{Name: "degrade", Skill: RolePrimary, Secured: true, Posture: detector.Degrade, Idempotent: true},
		},
		Expect: slices.Concat(
			row(LabelBase, "swapped", "secured", OutcomeAbort, detector.RuleSecuritySchemeRemoved, detector.RuleSecurityRequirementsChanged),
			row(LabelBase, "swapped", "degrade", OutcomeReplan, detector.RuleSecuritySchemeRemoved),
		),
		build: buildSecuritySchemeSwap,
	},
	{
		Name:        ProtocolVersionChange,
		Description: "the agent stops offering a protocol version line it declared (0.2 → 0.3, 0.3 → 1.0, or 1.0 rolled back to 0.3); version bumped",
		Profiles:    []ProfileSpec{profilePlain, profileDegrade},
		Expect: slices.Concat(
			row(LabelBase, "shifted", "plain", OutcomeAbort, detector.RuleProtocolVersionChanged),
			row(LabelBase, "shifted", "degrade", OutcomeReplan, detector.RuleProtocolVersionChanged),
		),
		build: buildProtocolVersionChange,
	},
	{
		Name:        InterfaceMove,
		Description: "an HTTP interface of the agent moves to a new URL; the card's version does not change",
		Profiles:    []ProfileSpec{profilePlain, profileDegrade},
		Expect: slices.Concat(
			row(LabelBase, "moved", "plain", OutcomeAbort, detector.RuleInterfaceChanged),
			row(LabelBase, "moved", "degrade", OutcomeReplan, detector.RuleInterfaceChanged),
		),
		build: buildInterfaceMove,
	},
	{
		Name:        SkillRemoved,
		Description: "a skill disappears from the card; version bumped; tasks on other skills carry on",
		Profiles:    []ProfileSpec{profilePlain, profileDegrade, profileOther},
		Expect: slices.Concat(
			row(LabelBase, "removed", "plain degrade", OutcomeAbort, detector.RuleSkillRemoved),
			row(LabelBase, "removed", "other", OutcomeContinue, detector.RuleSkillRemoved),
		),
		build: buildSkillRemoved,
	},
	{
		Name: SkillRenamed,
		Description: "a skill gets a new id (same modes, tags and security requirements); to a client planned on the old id it is gone, " +
			"and a degrade task re-plans onto the new id",
		Profiles: []ProfileSpec{profilePlain, profileDegrade, profileOther},
		Expect: slices.Concat(
			row(LabelBase, "renamed", "plain", OutcomeAbort, detector.RuleSkillRenamed, detector.RuleContentChangedWithoutVersion),
			[]Expectation{{Profile: "degrade", From: LabelBase, To: "renamed", Outcome: OutcomeReplan, Rules: []string{detector.RuleSkillRenamed}, ReplanSkill: RoleRenamed}},
			row(LabelBase, "renamed", "other", OutcomeContinue, detector.RuleSkillRenamed),
		),
		build: buildSkillRenamed,
	},
	{
		Name:        DescriptionOnly,
		Description: "only descriptive text changes (card and skill descriptions); must never abort anything",
		Profiles:    []ProfileSpec{profilePlain, profileStream, profileDegrade, profileOther},
		Expect: slices.Concat(
			row(LabelBase, "reworded", "plain stream degrade other", OutcomeContinue, detector.RuleDescriptiveTextChanged),
		),
		build: buildDescriptionOnly,
		// Behind a version ETag a text change shows only at the next full
		// fetch; modes-without-version-bump covers that case.
		prefers: func(a *Agent) bool { return a.Caching() != CacheVersion },
	},
	{
		Name:        Flapping,
		Description: "streaming is switched off and back on, once or twice: every change and every revert is drift to tasks pinned before it",
		Profiles:    []ProfileSpec{profileStream, profileDegrade, profilePlain},
		Expect: slices.Concat(
			row(LabelBase, "flipped", "stream", OutcomeAbort, detector.RuleStreamingDisabled),
			row(LabelBase, "flipped", "plain degrade", OutcomeContinue, detector.RuleStreamingDisabled),
			row("flipped", LabelBase, "plain degrade", OutcomeContinue, detector.RuleStreamingEnabled),
		),
		build:   buildFlapping,
		prefers: func(a *Agent) bool { return a.Caching() == CacheStrong },
	},
	{
		Name: RollingDeploy,
		Description: "two replicas behind one URL serve the old and the new card alternately for a while, then only the new one " +
			"(version bumped, one skill added, description edited)",
		Profiles: []ProfileSpec{profilePlain, profileStream, profileDegrade, {Name: "added", Skill: RoleAdded}},
		Expect: slices.Concat(
			row(LabelBase, "next", "plain", OutcomeContinue, detector.RuleSkillAdded, detector.RuleCardVersionChanged),
			row(LabelBase, "next", "stream degrade", OutcomeContinue, detector.RuleSkillAdded),
			row("next", LabelBase, "plain", OutcomeContinue, detector.RuleSkillRemoved, detector.RuleCardVersionChanged),
			row("next", LabelBase, "stream degrade", OutcomeContinue, detector.RuleSkillRemoved),
			row("next", LabelBase, "added", OutcomeAbort, detector.RuleSkillRemoved),
		),
		build: buildRollingDeploy,
	},
	{
		Name:        AgentDown,
		Description: "the agent is unreachable for a while (connection refused or 503), then back with the same card: unreachable, never drift",
		Profiles:    []ProfileSpec{profilePlain, profileStream, profileDegrade},
		Expect: slices.Concat(
			row(LabelBase, LabelDown, "plain stream degrade", OutcomeUnreachable),
		),
		build: buildAgentDown,
	},
	{
		Name: SplitBrain,
		Description: "two replicas behind one URL serve different cards at once — a stale pod still serves the card without streaming — " +
			"and requests are spread across them, until the stale pod is gone: card.inconsistent names the cause of the drift that comes and goes",
		Profiles: []ProfileSpec{profileStream, profileDegrade, profilePlain, profileOther},
		Expect: slices.Concat(
			row(LabelBase, "stale", "stream", OutcomeAbort, detector.RuleStreamingDisabled),
			row(LabelBase, "stale", "plain degrade other", OutcomeContinue, detector.RuleStreamingDisabled),
			row("stale", LabelBase, "plain degrade other", OutcomeContinue, detector.RuleStreamingEnabled),
		),
		build: buildSplitBrain,
	},
}

// Build functions: each prepares b.base, derives the changed cards and
// schedules the steps within 20% to 95% of the run.

func buildPinningRotation(b *builder) error {
	base := b.base
	base.setCapability("streaming", true)
	base.v["skills"] = []any{object{
		"id":          "summarize",
		"name":        "Summarize",
		"description": "Summarizes documents and conversations.",
		"tags":        []string{"summarization", "text"},
		"inputModes":  []string{"text/plain"},
		"outputModes": []string{"text/plain", "text/markdown"},
	}}
	base.setSecurity("bearer", schemeBearer)
	rotated := base.clone()
	rotated.setCapability("streaming", false)
	rotated.addSkill("translate", "Translate", "Translates text between languages.", "translation")
	rotated.setSecurity("oauth2", schemeOAuth2, "agent:invoke")
	b.roles[RolePrimary], b.roles[RoleAdded] = "summarize", "translate"
	b.change("rotated", rotated)
	return nil
}

func buildModesWithoutVersionBump(b *builder) error {
	b.twoSkills()
	c, err := b.base.parsed()
	if err != nil {
		return err
	}
	id := b.roles[RolePrimary]
	sk, _ := c.Skill(id)
	modes := []string{"text/markdown"}
	if old := c.OutputModes(sk); len(old) > 0 && detector.Covers(modes, old[0]) {
		modes = []string{"application/json"}
	}
	changed := b.base.clone()
	changed.skill(id)["outputModes"] = modes
	b.change("modes-changed", changed)
	return nil
}

func buildSecuritySchemeSwap(b *builder) error {
	c, err := b.base.parsed()
	if err != nil {
		return err
	}
	if len(c.SecurityRequirements) == 0 || len(c.SecurityRequirements[0]) == 0 {
		b.base.setSecurity("bearerAuth", schemeBearer)
		if c, err = b.base.parsed(); err != nil {
			return err
		}
	}
	var oldNames []string
	for name := range c.SecurityRequirements[0] {
		oldNames = append(oldNames, name)
	}
	slices.Sort(oldNames)
	// Another kind than the first scheme required today.
	kinds := []schemeKind{schemeBearer, schemeAPIKey, schemeOAuth2}
	switch s := c.SecuritySchemes[oldNames[0]]; {
	case s.Type == "http" && s.Scheme == "bearer":
		kinds = kinds[1:]
	case s.Type == "apiKey":
		kinds = []schemeKind{schemeBearer, schemeOAuth2}
	case s.Type == "oauth2":
		kinds = kinds[:2]
	}
	k := kinds[b.rng.IntN(len(kinds))]
	name, scopes := []string{"bearerAuth", "apiKey", "oauth2"}[k], []string(nil)
	if k == schemeOAuth2 {
		scopes = []string{"agent:invoke"}
	}
	if slices.Contains(oldNames, name) {
		name += "2"
	}
	swapped := b.base.clone()
	swapped.setSecurity(name, k, scopes...)
	swapped.bumpVersion()
	b.change("swapped", swapped)
	return nil
}

func buildProtocolVersionChange(b *builder) error {
	b.base.ensureProtocolVersion()
	shifted := b.base.clone()
	shifted.shiftProtocolVersion()
	shifted.bumpVersion()
	b.change("shifted", shifted)
	return nil
}

func buildInterfaceMove(b *builder) error {
	c, err := b.base.parsed()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(c.Interfaces, func(in detector.Interface) bool {
		return strings.HasPrefix(in.URL, "http://") || strings.HasPrefix(in.URL, "https://")
	})
	if i < 0 {
		return fmt.Errorf("card has no HTTP interface to move")
	}
	from := c.Interfaces[i].URL
	u, err := url.Parse(from)
	if err != nil {
		return err
	}
	to := "http://" + u.Host + "/a2a/v2"
	if to == strings.TrimSuffix(from, "/") {
		to += "-next"
	}
	moved := b.base.clone()
	for _, o := range interfaces(moved.v) {
		if o["url"] == from {
			o["url"] = to
		}
	}
	b.change("moved", moved)
	return nil
}

func buildSkillRemoved(b *builder) error {
	b.twoSkills()
	removed := b.base.clone()
	removed.removeSkill(b.roles[RolePrimary])
	removed.bumpVersion()
	b.change("removed", removed)
	return nil
}

// successorID is the id a renamed or follow-up skill gets, in the id's own
// style.
func successorID(id, suffix string, taken []string) string {
	sep := "-"
	if strings.Contains(id, "_") {
		sep = "_"
	}
	out := id + sep + suffix
	for slices.Contains(taken, out) {
		out += sep + suffix
	}
	return out
}

func buildSkillRenamed(b *builder) error {
	b.twoSkills()
	id := b.roles[RolePrimary]
	b.roles[RoleRenamed] = successorID(id, "v2", b.base.skillIDs())
	renamed := b.base.clone()
	renamed.skill(id)["id"] = b.roles[RoleRenamed]
	b.change("renamed", renamed)
	return nil
}

func buildDescriptionOnly(b *builder) error {
	b.twoSkills()
	id := b.roles[RolePrimary]
	reworded := b.base.clone()
	reworded.setDescription(strings.TrimSpace(str(reworded.v, "description")+" Now with faster responses."),
		id, strings.TrimSpace(str(reworded.skill(id), "description")+" Results are more concise."))
	b.change("reworded", reworded)
	return nil
}

// minFlapPhase is the shortest phase of the flapping scenario.
const minFlapPhase = 3 * time.Second

func buildFlapping(b *builder) error {
	b.base.setCapability("streaming", true)
	flipped := b.base.clone()
	flipped.setCapability("streaming", false)
	b.card(LabelBase, b.base)
	b.card("flipped", flipped)
	t := b.at(0.2, 0.35)
	// Each phase lasts at least minFlapPhase, so that a worker whose lease
	// is the fleet's max-age can see it (bounded by 15% of the duration, so
	// that short schedules still fit); as many flips as fit before 95%.
	phase := func() time.Duration {
		return max(b.at(0.08, 0.15), min(minFlapPhase, time.Duration(0.15*float64(b.d))))
	}
	for i := range 1 + b.rng.IntN(2) {
		on, off := phase(), phase()
		if i > 0 && t+on+off > time.Duration(0.95*float64(b.d)) {
			break
		}
		b.steps = append(b.steps, Step{At: t, Card: "flipped"}, Step{At: t + on, Card: LabelBase})
		t += on + off
	}
	return nil
}

func buildRollingDeploy(b *builder) error {
	b.pick()
	id := b.roles[RolePrimary]
	b.roles[RoleAdded] = successorID(id, "batch", b.base.skillIDs())
	next := b.base.clone()
	next.bumpVersion()
	next.addSkill(b.roles[RoleAdded], strings.TrimSpace("Batch "+str(b.base.skill(id), "name")), "Runs "+id+" over many inputs at once.", "batch")
	next.setDescription(strings.TrimSpace(str(next.v, "description")+" Now with batch processing."), "", "")
	b.card(LabelBase, b.base)
	b.card("next", next)
	t1 := b.at(0.25, 0.4)
	t2 := t1 + b.at(0.15, 0.25)
	b.steps = append(b.steps, Step{At: t1, Replicas: []string{LabelBase, "next"}}, Step{At: t2, Card: "next"})
	return nil
}

// buildSplitBrain serves, from 25% to about 90% of the run, the base card
// and a stale one (the previous version, streaming off) in turn. The
// versions differ, as a stale pod's does (one version behind a version
// ETag would answer 304 to the other).
func buildSplitBrain(b *builder) error {
	b.twoSkills()
	b.base.setCapability("streaming", true)
	stale := b.base.clone()
	stale.setCapability("streaming", false)
	stale.setDescription(strings.TrimSpace(str(stale.v, "description")+" (previous release)"), "", "")
	b.base.bumpVersion()
	b.card(LabelBase, b.base)
	b.card("stale", stale)
	t1 := b.at(0.25, 0.35)
	b.steps = append(b.steps, Step{At: t1, Replicas: []string{LabelBase, "stale"}}, Step{At: b.at(0.85, 0.92), Card: LabelBase})
	return nil
}

func buildAgentDown(b *builder) error {
	o := Refused
	if b.rng.IntN(2) == 1 {
		o = Unavailable
	}
	t1 := b.at(0.25, 0.45)
	t2 := t1 + b.at(0.15, 0.25)
	b.steps = append(b.steps, Step{At: t1, Outage: o}, Step{At: t2, Outage: Up})
	return nil
}
