package fleet

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
)

const testHost = "127.0.0.1:18080"

// instance is one scenario applied to one template card, without a network.
type instance struct {
	tmpl  template
	seed  uint64
	as    Assignment
	cards map[string]*detector.Card
}

// instances applies s to every template (and the A2A-Version-varying agent's
// card) under a few seeds.
func instances(t *testing.T, s Scenario) []instance {
	t.Helper()
	var out []instance
	for _, tm := range append(slices.Clone(templates), varyTemplate) {
		base, err := renderTemplate(tm.Name, testHost)
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			as, err := s.instantiate(rand.New(rand.NewPCG(seed, 7)), tm.Gen, base, 20*time.Second)
			if err != nil {
				t.Fatalf("%s on %s (seed %d): %v", s.Name, tm.Name, seed, err)
			}
			cards := map[string]*detector.Card{}
			for _, c := range as.Cards {
				p, err := detector.Parse(c.Raw)
				if err != nil {
					t.Fatalf("%s on %s: card %s: %v", s.Name, tm.Name, c.Label, err)
				}
				cards[c.Label] = p
			}
			out = append(out, instance{tmpl: tm, seed: seed, as: as, cards: cards})
		}
	}
	return out
}

// evaluate runs detector.Evaluate for one expectation of an instance.
func (in instance) evaluate(t *testing.T, e Expectation) ([]detector.Finding, detector.Verdict) {
	t.Helper()
	p, ok := in.as.Profile(e.Profile)
	if !ok {
		t.Fatalf("%s: expectation names unknown profile %q", in.tmpl.Name, e.Profile)
	}
	return detector.Evaluate(in.cards[e.From], in.cards[e.To], p.Task, p.Task.Posture)
}

// TestScenarioVerdictTables checks every row of every scenario's verdict
// table against detector.Evaluate, on every template card and several seeds:
// the action (or no findings at all for OutcomeNone) and the rule ids.
func TestScenarioVerdictTables(t *testing.T) {
	for _, s := range append(slices.Clone(scenarios), controlScenario) {
		t.Run(s.Name, func(t *testing.T) {
			for _, in := range instances(t, s) {
				for _, e := range in.as.Expectations {
					if e.To == LabelDown {
						if e.Outcome != OutcomeUnreachable {
							t.Errorf("%s: %s→down %s: outcome %s, want unreachable", in.tmpl.Name, e.From, e.Profile, e.Outcome)
						}
						continue
					}
					findings, v := in.evaluate(t, e)
					got := Outcome(v.Action)
					if len(findings) == 0 {
						got = OutcomeNone
					}
					if v.ReplanSkill != e.ReplanSkill {
						t.Errorf("%s seed %d: Evaluate(%s→%s, %s) replans onto %q, want %q",
							in.tmpl.Name, in.seed, e.From, e.To, e.Profile, v.ReplanSkill, e.ReplanSkill)
					}
					if got != e.Outcome {
						t.Errorf("%s seed %d: Evaluate(%s→%s, %s) = %s (%s), want %s; findings %v",
							in.tmpl.Name, in.seed, e.From, e.To, e.Profile, got, v.Reason, e.Outcome, detector.RuleIDs(findings))
					}
					for _, r := range e.Rules {
						if !slices.Contains(detector.RuleIDs(findings), r) {
							t.Errorf("%s seed %d: Evaluate(%s→%s, %s) rules = %v, missing %s",
								in.tmpl.Name, in.seed, e.From, e.To, e.Profile, detector.RuleIDs(findings), r)
						}
					}
				}
			}
		})
	}
}

// TestScenarioTablesComplete: for every pair of cards a schedule can put in
// front of a task, every profile plannable on the pinned card has an
// expected outcome, and every row of a table is used somewhere.
func TestScenarioTablesComplete(t *testing.T) {
	for _, s := range append(slices.Clone(scenarios), controlScenario) {
		t.Run(s.Name, func(t *testing.T) {
			used := map[int]bool{}
			for _, in := range instances(t, s) {
				if len(in.as.Profiles) == 0 {
					t.Errorf("%s: no profile binds", in.tmpl.Name)
				}
				for _, tr := range transitions(&in.as) {
					for _, p := range in.as.Plannable(tr[0]) {
						if _, ok := in.as.Expect(p.Name, tr[0], tr[1]); !ok {
							t.Errorf("%s seed %d: no expectation for %s on %s→%s", in.tmpl.Name, in.seed, p.Name, tr[0], tr[1])
						}
					}
				}
				for i, row := range s.Expect {
					if _, ok := in.as.Expect(row.Profile, row.From, row.To); ok {
						used[i] = true
					}
				}
			}
			for i, row := range s.Expect {
				if !used[i] {
					t.Errorf("row %d (%s %s→%s) applies to no template", i, row.Profile, row.From, row.To)
				}
			}
		})
	}
}

// TestScenarios states, per scenario, what it must do to the card and the
// verdict its key task gets (on every template card).
func TestScenarios(t *testing.T) {
	verdict := func(t *testing.T, in instance, profile, from, to string) detector.Verdict {
		t.Helper()
		e, ok := in.as.Expect(profile, from, to)
		if !ok {
			t.Fatalf("%s: no expectation %s %s→%s", in.tmpl.Name, profile, from, to)
		}
		_, v := in.evaluate(t, e)
		return v
	}
	impacting := func(v detector.Verdict) []string { return detector.RuleIDs(v.Impacting) }

	tests := []struct {
		name  string
		check func(t *testing.T, in instance)
	}{
		{PinningRotation, func(t *testing.T, in instance) {
			base, rot := in.cards[LabelBase], in.cards["rotated"]
			if !base.Capabilities.Streaming || rot.Capabilities.Streaming {
				t.Errorf("%s: streaming %v → %v, want true → false", in.tmpl.Name, base.Capabilities.Streaming, rot.Capabilities.Streaming)
			}
			if got := skillIDsOf(base); !slices.Equal(got, []string{"summarize"}) {
				t.Errorf("%s: base skills = %v, want [summarize]", in.tmpl.Name, got)
			}
			if got := skillIDsOf(rot); !slices.Equal(got, []string{"summarize", "translate"}) {
				t.Errorf("%s: rotated skills = %v, want [summarize translate]", in.tmpl.Name, got)
			}
			if s := base.SecuritySchemes["bearer"]; s.Type != "http" || s.Scheme != "bearer" {
				t.Errorf("%s: base scheme bearer = %+v, want http bearer", in.tmpl.Name, s)
			}
			if s := rot.SecuritySchemes["oauth2"]; s.Type != "oauth2" || len(rot.SecuritySchemes) != 1 {
				t.Errorf("%s: rotated schemes = %v, want only oauth2", in.tmpl.Name, rot.SecuritySchemes)
			}
			if v := verdict(t, in, "stream", LabelBase, "rotated"); v.Action != detector.Abort || !slices.Contains(impacting(v), detector.RuleStreamingDisabled) {
				t.Errorf("%s: fail-closed streaming summarize task: %s %v, want abort with streaming-disabled", in.tmpl.Name, v.Action, impacting(v))
			}
			if v := verdict(t, in, "degrade", LabelBase, "rotated"); v.Action != detector.Replan {
				t.Errorf("%s: degrade idempotent summarize task: %s, want replan", in.tmpl.Name, v.Action)
			}
		}},
		{ModesWithoutVersionBump, func(t *testing.T, in instance) {
			base, ch := in.cards[LabelBase], in.cards["modes-changed"]
			if base.Version != ch.Version {
				t.Errorf("%s: version %q → %q, want unchanged", in.tmpl.Name, base.Version, ch.Version)
			}
			if detector.Fingerprint(base) == detector.Fingerprint(ch) {
				t.Errorf("%s: fingerprint unchanged", in.tmpl.Name)
			}
			if v := verdict(t, in, "plain", LabelBase, "modes-changed"); v.Action != detector.Abort {
				t.Errorf("%s: task on the changed skill: %s, want abort", in.tmpl.Name, v.Action)
			}
			if v := verdict(t, in, "other", LabelBase, "modes-changed"); v.Action != detector.Continue {
				t.Errorf("%s: task on another skill: %s, want continue", in.tmpl.Name, v.Action)
			}
		}},
		{SecuritySchemeSwap, func(t *testing.T, in instance) {
			p, _ := in.as.Profile("secured")
			for _, name := range p.Task.Security {
				if _, ok := in.cards["swapped"].SecuritySchemes[name]; ok {
					t.Errorf("%s: scheme %s still offered after the swap", in.tmpl.Name, name)
				}
			}
			if v := verdict(t, in, "secured", LabelBase, "swapped"); v.Action != detector.Abort {
				t.Errorf("%s: task authenticating with %v: %s, want abort", in.tmpl.Name, p.Task.Security, v.Action)
			}
		}},
		{ProtocolVersionChange, func(t *testing.T, in instance) {
			before, after := in.cards[LabelBase].ProtocolVersions(), in.cards["shifted"].ProtocolVersions()
			if len(before) == 0 || slices.Equal(before, after) {
				t.Errorf("%s: protocol versions %v → %v, want a change", in.tmpl.Name, before, after)
			}
			if v := verdict(t, in, "plain", LabelBase, "shifted"); v.Action != detector.Abort || !slices.Contains(impacting(v), detector.RuleProtocolVersionChanged) {
				t.Errorf("%s: %s %v, want abort with protocol-version-changed", in.tmpl.Name, v.Action, impacting(v))
			}
		}},
		{InterfaceMove, func(t *testing.T, in instance) {
			if slices.Equal(urlsOf(in.cards[LabelBase]), urlsOf(in.cards["moved"])) {
				t.Errorf("%s: interfaces did not move: %v", in.tmpl.Name, urlsOf(in.cards["moved"]))
			}
			if v := verdict(t, in, "degrade", LabelBase, "moved"); v.Action != detector.Replan {
				t.Errorf("%s: degrade task: %s, want replan", in.tmpl.Name, v.Action)
			}
		}},
		{SkillRemoved, func(t *testing.T, in instance) {
			p, _ := in.as.Profile("plain")
			if _, ok := in.cards["removed"].Skill(p.Task.SkillID); ok {
				t.Errorf("%s: skill %s still offered", in.tmpl.Name, p.Task.SkillID)
			}
			if v := verdict(t, in, "degrade", LabelBase, "removed"); v.Action != detector.Abort {
				t.Errorf("%s: degrade task on the removed skill: %s, want abort (nothing to re-plan on)", in.tmpl.Name, v.Action)
			}
		}},
		{SkillRenamed, func(t *testing.T, in instance) {
			p, _ := in.as.Profile("plain")
			old, _ := in.cards[LabelBase].Skill(p.Task.SkillID)
			if _, ok := in.cards["renamed"].Skill(p.Task.SkillID); ok {
				t.Errorf("%s: old id %s still offered", in.tmpl.Name, p.Task.SkillID)
			}
			found := false
			for _, s := range in.cards["renamed"].Skills {
				found = found || (s.Name == old.Name && s.ID != old.ID)
			}
			if !found {
				t.Errorf("%s: no skill named %q under a new id", in.tmpl.Name, old.Name)
			}
		}},
		{DescriptionOnly, func(t *testing.T, in instance) {
			base, rew := in.cards[LabelBase], in.cards["reworded"]
			if detector.StructuralDigest(base) != detector.StructuralDigest(rew) {
				t.Errorf("%s: structural digest changed", in.tmpl.Name)
			}
			if base.Description == rew.Description {
				t.Errorf("%s: description unchanged", in.tmpl.Name)
			}
			for _, p := range in.as.Profiles {
				if _, v := detector.Evaluate(base, rew, p.Task, p.Task.Posture); v.Action != detector.Continue {
					t.Errorf("%s: %s task: %s, want continue", in.tmpl.Name, p.Name, v.Action)
				}
			}
		}},
		{Flapping, func(t *testing.T, in instance) {
			var seq []string
			for _, s := range in.as.Steps {
				seq = append(seq, s.Card)
			}
			if len(seq) != 3 && len(seq) != 5 {
				t.Errorf("%s: steps %v, want base then one or two flip-and-revert cycles", in.tmpl.Name, seq)
			}
			for i := 1; i < len(seq); i++ {
				want := "flipped"
				if i%2 == 0 {
					want = LabelBase
				}
				if seq[i] != want {
					t.Errorf("%s: step %d serves %s, want %s", in.tmpl.Name, i, seq[i], want)
				}
			}
			if got := len(drifts(&in.as)); got != len(seq)-1 {
				t.Errorf("%s: %d drifts, want %d (every change and every revert)", in.tmpl.Name, got, len(seq)-1)
			}
			// One flip and back is not split brain; two alternate.
			if got := in.as.Alternates(2 * time.Minute); got != (len(seq) == 5) {
				t.Errorf("%s: %d steps: Alternates = %v", in.tmpl.Name, len(seq), got)
			}
		}},
		{RollingDeploy, func(t *testing.T, in instance) {
			st := in.as.Steps
			if len(st) != 3 || !slices.Equal(st[1].Replicas, []string{LabelBase, "next"}) || st[2].Card != "next" {
				t.Fatalf("%s: steps %+v, want base, replicas [base next], next", in.tmpl.Name, st)
			}
			if got := in.as.LiveAt(st[1].At); !slices.Equal(got, []string{LabelBase, "next"}) {
				t.Errorf("%s: LiveAt(deploy) = %v", in.tmpl.Name, got)
			}
			// Replicas serving both versions in turn disagree while it lasts.
			if !in.as.Alternates(2 * time.Minute) {
				t.Errorf("%s: a deploy with both versions served in turn: Alternates = false", in.tmpl.Name)
			}
			for _, p := range in.as.Plannable(LabelBase) {
				for _, pair := range [][2]string{{LabelBase, "next"}} {
					if v := verdict(t, in, p.Name, pair[0], pair[1]); v.Action == detector.Abort {
						t.Errorf("%s: %s task aborted by a compatible deploy", in.tmpl.Name, p.Name)
					}
				}
			}
		}},
		{SplitBrain, func(t *testing.T, in instance) {
			st := in.as.Steps
			if len(st) != 3 || !slices.Equal(st[1].Replicas, []string{LabelBase, "stale"}) || st[2].Card != LabelBase {
				t.Fatalf("%s: steps %+v, want base, replicas [base stale], base", in.tmpl.Name, st)
			}
			if at, length := in.as.SplitAt(); at != st[1].At || length < in.as.Steps[2].At/2 {
				t.Errorf("%s: SplitAt = %v for %v, want half the run at least", in.tmpl.Name, at, length)
			}
			if !in.as.Alternates(2 * time.Minute) {
				t.Errorf("%s: Alternates = false", in.tmpl.Name)
			}
			if v := verdict(t, in, "stream", LabelBase, "stale"); v.Action != detector.Abort {
				t.Errorf("%s: a streaming task meeting the stale replica: %s, want abort", in.tmpl.Name, v.Action)
			}
		}},
		{AgentDown, func(t *testing.T, in instance) {
			if len(in.as.Cards) != 1 {
				t.Errorf("%s: %d cards, want only base", in.tmpl.Name, len(in.as.Cards))
			}
			if d := drifts(&in.as); len(d) != 0 {
				t.Errorf("%s: Drifts() = %v, want none: unreachable is not drift", in.tmpl.Name, d)
			}
			st := in.as.Steps
			if len(st) != 3 || st[1].Outage == Up || st[2].Outage != Up {
				t.Fatalf("%s: steps %+v, want base, down, up", in.tmpl.Name, st)
			}
			if got := in.as.LiveAt(st[1].At); !slices.Equal(got, []string{LabelDown}) {
				t.Errorf("%s: LiveAt(down) = %v, want [down]", in.tmpl.Name, got)
			}
			if got := in.as.LiveAt(st[2].At); !slices.Equal(got, []string{LabelBase}) {
				t.Errorf("%s: LiveAt(up) = %v, want [base]", in.tmpl.Name, got)
			}
			for _, p := range in.as.Plannable(LabelBase) {
				if e, _ := in.as.Expect(p.Name, LabelBase, LabelDown); e.Outcome != OutcomeUnreachable {
					t.Errorf("%s: %s while down: %s, want unreachable", in.tmpl.Name, p.Name, e.Outcome)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := LookupScenario(tt.name)
			if !ok {
				t.Fatalf("LookupScenario(%q) = false", tt.name)
			}
			for _, in := range instances(t, s) {
				tt.check(t, in)
			}
		})
	}
	if len(tests) != len(scenarios) {
		t.Errorf("%d scenario tests for %d scenarios", len(tests), len(scenarios))
	}
}

func skillIDsOf(c *detector.Card) []string {
	var out []string
	for _, s := range c.Skills {
		out = append(out, s.ID)
	}
	return out
}

func urlsOf(c *detector.Card) []string {
	var out []string
	for _, in := range c.Interfaces {
		out = append(out, in.URL)
	}
	return out
}

// TestScenarioSteps: steps are in time order, start with the base card at 0,
// stay inside the run and name cards the assignment holds.
func TestScenarioSteps(t *testing.T) {
	const d = 20 * time.Second
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) {
			for _, in := range instances(t, s) {
				st := in.as.Steps
				if st[0].At != 0 || st[0].Card != LabelBase {
					t.Errorf("%s: first step %+v, want base at 0", in.tmpl.Name, st[0])
				}
				for i, x := range st {
					if i > 0 && (x.At < st[i-1].At || x.At < d/5 || x.At >= d*95/100) {
						t.Errorf("%s: step %d at %v out of order or outside [%v, %v)", in.tmpl.Name, i, x.At, d/5, d*95/100)
					}
					for _, l := range append([]string{x.Card}, x.Replicas...) {
						if l != "" && in.as.Card(l) == nil {
							t.Errorf("%s: step %d serves unknown card %q", in.tmpl.Name, i, l)
						}
					}
				}
				if got, want := len(drifts(&in.as)) > 0, s.Name != AgentDown; got != want {
					t.Errorf("%s: drift injected = %v, want %v", in.tmpl.Name, got, want)
				}
			}
		})
	}
}

func TestParseScenarios(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr error
	}{
		{name: "empty means all", in: "", want: ScenarioNames()},
		{name: "all", in: "all", want: ScenarioNames()},
		{name: "list with spaces and duplicates", in: " flapping, agent-down,flapping ", want: []string{Flapping, AgentDown}},
		{name: "unknown", in: "flapping,nope", wantErr: ErrUnknownScenario},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseScenarios(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseScenarios(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr == nil && !slices.Equal(got, tt.want) {
				t.Errorf("ParseScenarios(%q) = %v, want %v", tt.in, got, tt.want)
			}
			if tt.wantErr != nil && !strings.Contains(err.Error(), PinningRotation) {
				t.Errorf("error %q does not list the known scenarios", err)
			}
		})
	}
}

func TestOutcomeAction(t *testing.T) {
	tests := []struct {
		o      Outcome
		want   detector.Action
		wantOK bool
	}{
		{OutcomeAbort, detector.Abort, true},
		{OutcomeReplan, detector.Replan, true},
		{OutcomeContinue, detector.Continue, true},
		{OutcomeNone, "", false},
		{OutcomeUnreachable, "", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.o), func(t *testing.T) {
			got, ok := tt.o.Action()
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Outcome(%q).Action() = %q, %v, want %q, %v", tt.o, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// drifts returns the offsets of the steps that inject drift: those that
// serve a card the step before did not (a change, a revert, the first
// replica of a new version). Outages are not drift.
func drifts(as *Assignment) []time.Duration {
	var out []time.Duration
	var prev []string
	for i, s := range as.Steps {
		cur := as.LiveAt(s.At)
		if slices.Contains(cur, LabelDown) {
			continue
		}
		if i > 0 && slices.ContainsFunc(cur, func(l string) bool { return !slices.Contains(prev, l) }) {
			out = append(out, s.At)
		}
		prev = cur
	}
	return out
}

// transitions returns every (pinned, live) pair of different labels the
// schedule can produce: a task pinned on any card served up to a step meets
// each card that step serves.
func transitions(as *Assignment) [][2]string {
	var out [][2]string
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
				if k := [2]string{from, to}; from != to && !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	return out
}
