package detector

import "testing"

func TestCheckSkillRemoved(t *testing.T) {
	runCheck(t, "checkSkillRemoved(pinned, live)", checkSkillRemoved, []checkCase{
		{
			name:   "skill dropped",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = c.Skills[:1] }),
			want: []Finding{{
				Rule: RuleSkillRemoved, Severity: Breaking, Path: "/skills/1", Before: "translate",
				Message: `skill "translate" is no longer offered`, Skill: "translate",
			}},
		},
		{
			name:   "renamed skill (same contract) is skill-renamed, not removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].ID = "abstract" }),
		},
		{
			name:   "skill replaced by one of another contract is removed under its old id",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].ID, c.Skills[0].Tags = "abstract", []string{"text"} }),
			want: []Finding{{
				Rule: RuleSkillRemoved, Severity: Breaking, Path: "/skills/0", Before: "summarize",
				Message: `skill "summarize" is no longer offered`, Skill: "summarize",
			}},
		},
		{
			name:   "skill added",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = append(c.Skills, Skill{ID: "geocode", Index: 2}) }),
		},
		{
			name:   "all skills gone",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = nil }),
			want: []Finding{
				{
					Rule: RuleSkillRemoved, Severity: Breaking, Path: "/skills/0", Before: "summarize",
					Message: `skill "summarize" is no longer offered`, Skill: "summarize",
				},
				{
					Rule: RuleSkillRemoved, Severity: Breaking, Path: "/skills/1", Before: "translate",
					Message: `skill "translate" is no longer offered`, Skill: "translate",
				},
			},
		},
	})
}

func TestCheckSkillAdded(t *testing.T) {
	runCheck(t, "checkSkillAdded(pinned, live)", checkSkillAdded, []checkCase{
		{
			name:   "skill appended",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = append(c.Skills, Skill{ID: "geocode", Index: 2}) }),
			want: []Finding{{
				Rule: RuleSkillAdded, Severity: Info, Path: "/skills/2", After: "geocode",
				Message: `skill "geocode" is now offered`, Skill: "geocode",
			}},
		},
		{
			name:   "renamed skill (same contract) is skill-renamed, not added",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].ID = "abstract" }),
		},
		{
			name:   "skill replaced by one of another contract is added under its new id",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills[0].ID, c.Skills[0].Tags = "abstract", []string{"text"} }),
			want: []Finding{{
				Rule: RuleSkillAdded, Severity: Info, Path: "/skills/0", After: "abstract",
				Message: `skill "abstract" is now offered`, Skill: "abstract",
			}},
		},
		{
			name:   "skill removed",
			pinned: testCard(),
			live:   modified(func(c *Card) { c.Skills = c.Skills[:1] }),
		},
	})
}
