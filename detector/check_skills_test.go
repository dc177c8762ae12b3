package detector

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// skillFindings are the skill-removed or skill-added findings of the skills
// given as "index/id".
func skillFindings(rule string, skills ...string) []Finding {
	var out []Finding
	for _, s := range skills {
		index, id, _ := strings.Cut(s, "/")
		f := Finding{Rule: rule, Severity: Breaking, Path: "/skills/" + index, Before: id, Skill: id,
			Message: "skill " + strconv.Quote(id) + " is no longer offered"}
		if rule == RuleSkillAdded {
			f.Severity, f.Before, f.After, f.Message = Info, nil, id, "skill "+strconv.Quote(id)+" is now offered"
		}
		out = append(out, f)
	}
	return out
}

// TestCheckSkillRemovedAdded runs both checks on each case: a rename is
// neither, a skill of another contract under a new id is both.
func TestCheckSkillRemovedAdded(t *testing.T) {
	var removed, added []checkCase
	for _, tc := range []struct {
		name           string
		live           func(*Card)
		removed, added []Finding
	}{
		{"skill dropped", func(c *Card) { c.Skills = c.Skills[:1] }, skillFindings(RuleSkillRemoved, "1/translate"), nil},
		{"skill appended", func(c *Card) { c.Skills = append(c.Skills, Skill{ID: "geocode", Index: 2}) },
			nil, skillFindings(RuleSkillAdded, "2/geocode")},
		{"renamed skill (same contract) is skill-renamed", func(c *Card) { c.Skills[0].ID = "abstract" }, nil, nil},
		{"skill replaced by one of another contract is removed under its old id and added under its new",
			func(c *Card) { c.Skills[0].ID, c.Skills[0].Tags = "abstract", []string{"text"} },
			skillFindings(RuleSkillRemoved, "0/summarize"), skillFindings(RuleSkillAdded, "0/abstract")},
		{"all skills gone", func(c *Card) { c.Skills = nil }, skillFindings(RuleSkillRemoved, "0/summarize", "1/translate"), nil},
	} {
		removed = append(removed, checkCase{name: tc.name, live: modified(tc.live), want: tc.removed})
		added = append(added, checkCase{name: tc.name, live: modified(tc.live), want: tc.added})
	}
	t.Run("removed", func(t *testing.T) { runCheck(t, "checkSkillRemoved(pinned, live)", checkSkillRemoved, removed) })
	t.Run("added", func(t *testing.T) { runCheck(t, "checkSkillAdded(pinned, live)", checkSkillAdded, added) })
}

// renamedFinding is the skill-renamed finding of testCard's skill from,
// offered as to at index i of the live card.
func renamedFinding(from, to string, i int) Finding {
	return Finding{
		Rule: RuleSkillRenamed, Severity: Breaking, Path: "/skills/" + strconv.Itoa(i) + "/id",
		Before: from, After: to, Skill: from,
		Message: `skill "` + from + `" is no longer offered; the same skill (modes, tags, security requirements) is now offered as "` + to + `"`,
	}
}

func TestCheckSkillRenamed(t *testing.T) {
	runCheck(t, "checkSkillRenamed(pinned, live)", checkSkillRenamed, []checkCase{
		{
			name: "new id, same contract",
			live: modified(func(c *Card) { c.Skills[0].ID = "abstract" }),
			want: []Finding{renamedFinding("summarize", "abstract", 0)},
		},
		{
			name: "new id; name, description and examples rewritten too",
			live: modified(func(c *Card) {
				c.Skills[1].ID, c.Skills[1].Name = "translate-v2", "Translate (v2)"
				c.Skills[1].Description, c.Skills[1].Examples = "Translates.", []string{"Say hi in French"}
			}),
			want: []Finding{renamedFinding("translate", "translate-v2", 1)},
		},
		{
			name: "tags reordered and media types respelled: the same contract",
			live: modified(func(c *Card) {
				c.Skills[1].ID = "translate-v2"
				c.Skills[1].Tags = []string{"language", "text", "text"}
				c.Skills[1].OutputModes = []string{"image/*", "Text/Plain"}
			}),
			want: []Finding{renamedFinding("translate", "translate-v2", 1)},
		},
		{
			name: "the card defaults spelled out on the skill: the same effective modes",
			live: modified(func(c *Card) {
				c.Skills[0].ID = "abstract"
				c.Skills[0].InputModes = []string{"application/json", "text/plain"}
				c.Skills[0].OutputModes = []string{"application/json"}
				c.Skills[0].SecurityRequirements = []SecurityRequirement{{"oauth": {"read"}}, {"bearer": {}}}
			}),
			want: []Finding{renamedFinding("summarize", "abstract", 0)},
		},
		{
			name: "two skills renamed, each its own contract",
			live: modified(func(c *Card) {
				c.Skills[0].ID = "abstract"
				c.Skills[1].ID = "interpret"
			}),
			want: []Finding{renamedFinding("summarize", "abstract", 0), renamedFinding("translate", "interpret", 1)},
		},
		{
			name: "new id and other input modes: another skill",
			live: modified(func(c *Card) {
				c.Skills[1].ID = "translate-v2"
				c.Skills[1].InputModes = []string{"text/plain", "application/pdf"}
			}),
		},
		{
			name: "new id and other output modes: another skill",
			live: modified(func(c *Card) {
				c.Skills[1].ID = "translate-v2"
				c.Skills[1].OutputModes = []string{"text/plain"}
			}),
		},
		{
			name: "new id and other tags: another skill",
			live: modified(func(c *Card) {
				c.Skills[0].ID = "abstract"
				c.Skills[0].Tags = []string{"text"}
			}),
		},
		{
			name: "new id and other security requirements: another skill",
			live: modified(func(c *Card) {
				c.Skills[1].ID = "translate-v2"
				c.Skills[1].SecurityRequirements = []SecurityRequirement{{"oauth": {"translate", "admin"}}}
			}),
		},
		{
			name: "the card's requirements change under a skill that inherits them: another skill",
			live: modified(func(c *Card) {
				c.Skills[0].ID = "abstract"
				c.SecurityRequirements = c.SecurityRequirements[1:]
			}),
		},
		{
			name:   "ambiguous: two gone skills with the new skill's contract",
			pinned: modified(func(c *Card) { c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2)) }),
			live: modified(func(c *Card) {
				c.Skills[0].ID = "abstract"
			}),
		},
		{
			name: "ambiguous: two new skills with the gone skill's contract",
			live: modified(func(c *Card) {
				c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2))
				c.Skills[0].ID = "abstract"
			}),
		},
		{
			name:   "a retained skill with the same contract does not make a rename ambiguous",
			pinned: modified(func(c *Card) { c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2)) }),
			live: modified(func(c *Card) {
				c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2))
				c.Skills[0].ID = "abstract"
			}),
			want: []Finding{renamedFinding("summarize", "abstract", 0)},
		},
		{
			name: "a skill with an empty id is never renamed",
			live: modified(func(c *Card) { c.Skills[0].ID = "" }),
		},
		{
			name: "skill removed, none added",
			live: modified(func(c *Card) { c.Skills = c.Skills[:1] }),
		},
	})
}

// twin is skill s under another id and served index.
func twin(s Skill, id string, index int) Skill {
	s.ID, s.Index = id, index
	s.Tags = slices.Clone(s.Tags)
	return s
}

// TestRenameIsOneFinding: Diff reports a rename as skill-renamed alone (no
// skill-removed, no skill-added), keeps content-changed-without-version-bump
// when the version stays, and leaves an ambiguous or contract-changing
// "rename" as a removal and an addition.
func TestRenameIsOneFinding(t *testing.T) {
	ids := func(fs []Finding) []string { return RuleIDs(fs) }
	cases := []struct {
		name         string
		pinned, live *Card
		want, absent []string
	}{
		{
			name:   "pure rename, version kept",
			pinned: testCard(), live: modified(func(c *Card) { c.Skills[0].ID = "abstract" }),
			want:   []string{RuleSkillRenamed, RuleContentChangedWithoutVersion},
			absent: []string{RuleSkillRemoved, RuleSkillAdded},
		},
		{
			name:   "pure rename, version bumped",
			pinned: testCard(), live: modified(func(c *Card) { c.Skills[0].ID, c.Version = "abstract", "1.3.0" }),
			want:   []string{RuleSkillRenamed, RuleCardVersionChanged},
			absent: []string{RuleSkillRemoved, RuleSkillAdded, RuleContentChangedWithoutVersion},
		},
		{
			name:   "new id with other tags",
			pinned: testCard(), live: modified(func(c *Card) { c.Skills[0].ID, c.Skills[0].Tags = "abstract", []string{"text"} }),
			want:   []string{RuleSkillRemoved, RuleSkillAdded},
			absent: []string{RuleSkillRenamed},
		},
		{
			name:   "ambiguous: two new twins",
			pinned: testCard(),
			live: modified(func(c *Card) {
				c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2))
				c.Skills[0].ID = "abstract"
			}),
			want:   []string{RuleSkillRemoved, RuleSkillAdded},
			absent: []string{RuleSkillRenamed},
		},
		{
			name:   "ambiguous: two gone twins",
			pinned: modified(func(c *Card) { c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2)) }),
			live:   modified(func(c *Card) { c.Skills[0].ID = "abstract" }),
			want:   []string{RuleSkillRemoved, RuleSkillAdded},
			absent: []string{RuleSkillRenamed},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(Diff(tc.pinned, tc.live))
			for _, id := range tc.want {
				if !slices.Contains(got, id) {
					t.Errorf("Diff rules = %v, want %s among them", got, id)
				}
			}
			for _, id := range tc.absent {
				if slices.Contains(got, id) {
					t.Errorf("Diff rules = %v, want no %s", got, id)
				}
			}
		})
	}
	// In the ambiguous cases every gone id is removed and every new id added.
	fs := Diff(modified(func(c *Card) { c.Skills = append(c.Skills, twin(c.Skills[0], "digest", 2)) }),
		modified(func(c *Card) { c.Skills[0].ID = "abstract" }))
	var removed []string
	for _, f := range fs {
		if f.Rule == RuleSkillRemoved {
			removed = append(removed, f.Skill)
		}
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"digest", "summarize"}) {
		t.Errorf("removed skills = %v, want [digest summarize]", removed)
	}
}

// TestJudgeRenamedSkill: a rename is breaking for the task on the old id;
// under degrade an idempotent task re-plans onto the new id
// (Verdict.ReplanSkill), a task that is not idempotent and every
// fail-closed task abort, a task on another skill continues.
func TestJudgeRenamedSkill(t *testing.T) {
	pinned := testCard()
	live := modified(func(c *Card) { c.Skills[1].ID = "translate-v2" })
	ambiguous := modified(func(c *Card) {
		c.Skills = append(c.Skills, twin(c.Skills[1], "interpret", 2))
		c.Skills[1].ID = "translate-v2"
	})
	cases := []struct {
		name    string
		live    *Card
		req     Requirements
		posture Posture
		action  Action
		replan  string
	}{
		{"degrade, idempotent", live, Requirements{SkillID: "translate", Idempotent: true}, Degrade, Replan, "translate-v2"},
		{"degrade, not idempotent", live, Requirements{SkillID: "translate"}, Degrade, Abort, ""},
		{"fail-closed, idempotent", live, Requirements{SkillID: "translate", Idempotent: true}, FailClosed, Abort, ""},
		{"degrade, another skill", live, Requirements{SkillID: "summarize", Idempotent: true}, Degrade, Continue, ""},
		{"degrade, idempotent, ambiguous rename", ambiguous, Requirements{SkillID: "translate", Idempotent: true}, Degrade, Abort, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, v := Evaluate(pinned, tc.live, tc.req, tc.posture)
			if v.Action != tc.action || v.ReplanSkill != tc.replan {
				t.Fatalf("verdict = %s (replanSkill %q): %s; want %s (replanSkill %q)\n%s",
					v.Action, v.ReplanSkill, v.Reason, tc.action, tc.replan, dump(fs))
			}
			if tc.replan != "" && !strings.Contains(v.Reason, `"`+tc.replan+`"`) {
				t.Errorf("reason %q does not name the new id", v.Reason)
			}
		})
	}

	// A rule set that downgrades skill-renamed to info leaves the removal
	// unweighed: nothing breaking touches the task.
	fs := Diff(pinned, live)
	rs := &RuleSet{Severity: map[string]Severity{RuleSkillRenamed: Info}}
	_, v := Assess(rs.Apply(fs), pinned, live, Requirements{SkillID: "translate", Idempotent: true}, Degrade)
	if v.Action != Continue || v.ReplanSkill != "" {
		t.Errorf("skill-renamed as info: verdict %s (replanSkill %q), want continue", v.Action, v.ReplanSkill)
	}
}
