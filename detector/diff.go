package detector

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Diff returns every card-level finding between the card a task was planned
// against (pinned) and the card the agent serves now (live), sorted
// (SortFindings), with paths that resolve in the card as served. Differences
// of form alone (whitespace, key order, set order, equivalent spellings) give
// none. A nil card is an empty one; Diff never modifies its inputs.
func Diff(pinned, live *Card) []Finding {
	if pinned == nil {
		pinned = &Card{}
	}
	if live == nil {
		live = &Card{}
	}
	var out []Finding
	for _, r := range registry {
		if r.Check != nil {
			out = append(out, r.Check(pinned, live)...)
		}
	}
	servedPaths(out, pinned, live)
	SortFindings(out)
	return out
}

// RuleIDs returns the rule ids of fs, each once, in order of first finding.
func RuleIDs(fs []Finding) []string {
	ids := make([]string, 0, len(fs))
	for _, f := range fs {
		if !slices.Contains(ids, f.Rule) {
			ids = append(ids, f.Rule)
		}
	}
	return ids
}

// SortFindings sorts stably: most serious first, then rule id, path, skill,
// scheme and message.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(b.Severity, a.Severity),
			strings.Compare(a.Rule, b.Rule),
			strings.Compare(a.Path, b.Path),
			strings.Compare(a.Skill, b.Skill),
			strings.Compare(a.Scheme, b.Scheme),
			strings.Compare(a.Message, b.Message),
		)
	})
}

// pointer builds an RFC 6901 JSON pointer from unescaped reference tokens.
func pointer(tokens ...string) string {
	n := 0
	for _, t := range tokens {
		n += len(t) + 1
	}
	var b strings.Builder
	b.Grow(n + 4)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

func skillPointer(s Skill, field ...string) string {
	return pointer(append([]string{"skills", strconv.Itoa(s.Index)}, field...)...)
}

func interfacePointer(i int, field ...string) string {
	return pointer(append([]string{"supportedInterfaces", strconv.Itoa(i)}, field...)...)
}

// schemeWrapper is the v1.0 oneof member that holds a scheme of type typ.
func schemeWrapper(typ string) string {
	for _, w := range schemeWrappers {
		if w.typ == typ {
			return w.key
		}
	}
	return typ
}

func schemePointer(name string, s SecurityScheme, field ...string) string {
	if len(field) == 0 {
		return pointer("securitySchemes", name)
	}
	return pointer(append([]string{"securitySchemes", name, schemeWrapper(s.Type)}, field...)...)
}

// skillsByID returns the skills of c in id order, the first of a duplicated
// id only (as in Card.Skill). Cards from Parse need no copy.
func skillsByID(c *Card) []Skill {
	i := 1
	for i < len(c.Skills) && c.Skills[i-1].ID < c.Skills[i].ID {
		i++
	}
	if i >= len(c.Skills) {
		return c.Skills
	}
	out := slices.Clone(c.Skills)
	slices.SortStableFunc(out, func(a, b Skill) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b Skill) bool { return a.ID == b.ID })
}

// skillByID finds a skill in cards built without Parse too.
func skillByID(c *Card, id string) (Skill, bool) {
	if c.skillIndex != nil {
		return c.Skill(id)
	}
	for _, s := range c.Skills {
		if s.ID == id {
			return s, true
		}
	}
	return Skill{}, false
}

// retainedSkills calls fn for every skill id of both cards, in id order.
func retainedSkills(pinned, live *Card, fn func(p, l Skill)) {
	for _, p := range skillsByID(pinned) {
		if l, ok := skillByID(live, p.ID); ok {
			fn(p, l)
		}
	}
}

// retained calls fn for every key of both maps, in key order.
func retained[V any](pinned, live map[string]V, fn func(key string, p, l V)) {
	for _, k := range sortedKeys(pinned) {
		if l, ok := live[k]; ok {
			fn(k, pinned[k], l)
		}
	}
}

// onlyIn returns the keys of m that other lacks, sorted.
func onlyIn[V any](m, other map[string]V) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		if _, ok := other[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// retainedFlows calls fn for every flow both oauth2 schemes declare, in order.
func retainedFlows(p, l SecurityScheme, fn func(flow string, pf, lf OAuthFlow)) {
	if p.Type == "oauth2" && l.Type == "oauth2" {
		retained(p.Flows, l.Flows, fn)
	}
}

// extensionsByURI indexes a card's extensions by URI (the first of a
// duplicated URI wins) with their index (servedPaths maps it to the served one).
func extensionsByURI(c *Card) map[string]indexedExtension {
	m := make(map[string]indexedExtension, len(c.Capabilities.Extensions))
	for i, e := range c.Capabilities.Extensions {
		if _, dup := m[e.URI]; !dup {
			m[e.URI] = indexedExtension{e, i}
		}
	}
	return m
}

type indexedExtension struct {
	Extension
	index int
}

func extensionPointer(i int, field ...string) string {
	return pointer(append([]string{"capabilities", "extensions", strconv.Itoa(i)}, field...)...)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// plainStrings returns a copy of s that is never nil, for Before/After.
func plainStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
