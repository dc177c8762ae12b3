package detector

import (
	"maps"
	"slices"
	"strings"
)

// checkSecurityRequirements reports a change of the card's requirements and
// of those that apply to each retained skill (its own, else the card's).
// Requirements compare as sets; an empty list is one empty alternative. A
// change is breaking unless it only relaxes: every pinned alternative still
// satisfies some live one (same schemes or fewer, same scopes or fewer).
func checkSecurityRequirements(pinned, live *Card) []Finding {
	var out []Finding
	if f, ok := requirementsFinding(pinned.SecurityRequirements, live.SecurityRequirements, "/card"); ok {
		f.Path = pointer("securityRequirements")
		out = append(out, f)
	}
	retainedSkills(pinned, live, func(p, l Skill) {
		if sameRequirements(p.SecurityRequirements, l.SecurityRequirements) {
			return
		}
		f, ok := requirementsFinding(skillRequirements(pinned, p), skillRequirements(live, l), "/skill", "skill", quote(l.ID))
		if !ok {
			return
		}
		f.Path = skillPointer(l, "securityRequirements")
		if len(l.SecurityRequirements) == 0 {
			f.Path = skillPointer(p, "securityRequirements")
		}
		f.Skill = l.ID
		out = append(out, f)
	})
	return out
}

func skillRequirements(c *Card, s Skill) []SecurityRequirement {
	if len(s.SecurityRequirements) > 0 {
		return s.SecurityRequirements
	}
	return c.SecurityRequirements
}

// effectiveRequirements: those of the skill with id in c, else the card's.
func effectiveRequirements(c *Card, skillID string) []SecurityRequirement {
	s, _ := skillByID(c, skillID)
	return skillRequirements(c, s)
}

func requirementsFinding(before, after []SecurityRequirement, variant string, kv ...string) (Finding, bool) {
	if sameRequirements(before, after) {
		return Finding{}, false
	}
	pb, pa := canonicalRequirements(before), canonicalRequirements(after)
	if slices.EqualFunc(pb, pa, func(a, b requirement) bool { return a.key == b.key }) {
		return Finding{}, false
	}
	sev := Info
	variant += "-relaxed"
	for _, p := range pb {
		if !slices.ContainsFunc(pa, func(l requirement) bool { return l.within(p) }) {
			sev = Breaking
			variant = strings.TrimSuffix(variant, "-relaxed")
			break
		}
	}
	kv = append(kv, "before", requirementsText(pb), "after", requirementsText(pa))
	return newFinding(RuleSecurityRequirementsChanged, variant, sev, "",
		plainRequirements(before), plainRequirements(after), kv...), true
}

// sameRequirements: written identically (a fast path).
func sameRequirements(a, b []SecurityRequirement) bool {
	return slices.EqualFunc(a, b, func(x, y SecurityRequirement) bool {
		return maps.EqualFunc(x, y, func(s, t []string) bool { return slices.Equal(s, t) })
	})
}

// requirement is one alternative in canonical form.
type requirement struct {
	schemes []string
	scopes  [][]string
	key     string
}

// within reports whether r asks for no more schemes or scopes than o.
func (r requirement) within(o requirement) bool {
	for i, s := range r.schemes {
		j := slices.Index(o.schemes, s)
		if j < 0 {
			return false
		}
		for _, scope := range r.scopes[i] {
			if !slices.Contains(o.scopes[j], scope) {
				return false
			}
		}
	}
	return true
}

// canonicalRequirements sorts and de-duplicates; empty is one empty
// alternative.
func canonicalRequirements(rs []SecurityRequirement) []requirement {
	if len(rs) == 0 {
		return []requirement{{}}
	}
	out := make([]requirement, 0, len(rs))
	for _, r := range rs {
		var c requirement
		var key strings.Builder
		for _, name := range sortedKeys(r) {
			scopes := slices.Compact(slices.Sorted(slices.Values(r[name])))
			c.schemes = append(c.schemes, name)
			c.scopes = append(c.scopes, scopes)
			key.WriteString(name)
			key.WriteByte(0)
			for _, s := range scopes {
				key.WriteString(s)
				key.WriteByte(1)
			}
			key.WriteByte(2)
		}
		c.key = key.String()
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b requirement) int { return strings.Compare(a.key, b.key) })
	return slices.CompactFunc(out, func(a, b requirement) bool { return a.key == b.key })
}

// requirementsText renders `"oauth"["read"] and "key" or "bearer"`.
func requirementsText(rs []requirement) string {
	alts := make([]string, len(rs))
	for i, r := range rs {
		if len(r.schemes) == 0 {
			alts[i] = "no authentication"
			continue
		}
		parts := make([]string, len(r.schemes))
		for j, s := range r.schemes {
			parts[j] = quote(s)
			if len(r.scopes[j]) > 0 {
				parts[j] += "[" + quoteList(r.scopes[j]) + "]"
			}
		}
		alts[i] = strings.Join(parts, " and ")
	}
	return strings.Join(alts, " or ")
}

// plainRequirements is a never-nil copy for Before/After.
func plainRequirements(rs []SecurityRequirement) []map[string][]string {
	out := make([]map[string][]string, len(rs))
	for i, r := range rs {
		m := make(map[string][]string, len(r))
		for k, v := range r {
			m[k] = plainStrings(v)
		}
		out[i] = m
	}
	return out
}
