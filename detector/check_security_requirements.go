package detector

import (
	"maps"
	"slices"
	"strings"
)

// checkSecurityRequirements reports a change of the card-level security
// requirements and, per retained skill, of the requirements that apply to it
// (Finding.Skill set): its own, else the card's (in v1.0 cards an empty list
// is unset, so it inherits). Requirements compare as sets, and an empty list
// equals one empty alternative (no authentication). A change is breaking
// unless it only relaxes: every pinned alternative still satisfies some live
// one (same schemes or fewer, each with the same scopes or fewer). A skill
// path points into the live skill, or into the pinned one when the live skill
// declares none.
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

// skillRequirements returns the requirements that apply to skill s of c: its
// own when it declares any, else the card's.
func skillRequirements(c *Card, s Skill) []SecurityRequirement {
	if len(s.SecurityRequirements) > 0 {
		return s.SecurityRequirements
	}
	return c.SecurityRequirements
}

// effectiveRequirements returns the requirements that apply to the skill with
// the given id in c (the card's when c has no such skill).
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
	return Finding{
		Rule:     RuleSecurityRequirementsChanged,
		Severity: sev,
		Before:   plainRequirements(before),
		After:    plainRequirements(after),
		Message:  render(RuleSecurityRequirementsChanged+variant, kv...),
	}, true
}

// sameRequirements reports whether two lists are written identically (a fast
// path: lists that differ may still be equivalent).
func sameRequirements(a, b []SecurityRequirement) bool {
	return slices.EqualFunc(a, b, func(x, y SecurityRequirement) bool {
		return maps.EqualFunc(x, y, func(s, t []string) bool { return slices.Equal(s, t) })
	})
}

// requirement is one alternative in canonical form: schemes sorted, scopes
// sorted and de-duplicated.
type requirement struct {
	schemes []string
	scopes  [][]string
	key     string
}

// within reports whether r asks for no more than o: every scheme of r is in o
// and r's scopes of it are a subset of o's.
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

// canonicalRequirements sorts and de-duplicates a requirement list; an empty
// list becomes a single empty alternative.
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

// requirementsText renders canonical requirements for a message, for example
// `"oauth"["read"] and "key" or "bearer"`; an empty alternative reads "no
// authentication".
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

// plainRequirements copies a requirement list into plain JSON-marshalable
// values; never nil.
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
