package detector

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Diff compares the card a task was planned against (pinned) with the card the
// agent serves now (live) and returns every card-level finding of the registry,
// sorted by severity (most serious first), rule id, path, skill, scheme and
// message. Cards that differ only in whitespace, key order, the order of sets
// or the spelling of equivalent media types give none. Paths are JSON pointers
// into the card as served (additions and changes into live, removals into
// pinned). A nil card is an empty one; Diff never modifies its inputs.
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

// RuleIDs returns the rule ids of fs, each once, in the order of their first
// finding: what a verdict line or an event's summary lists.
func RuleIDs(fs []Finding) []string {
	ids := make([]string, 0, len(fs))
	for _, f := range fs {
		if !slices.Contains(ids, f.Rule) {
			ids = append(ids, f.Rule)
		}
	}
	return ids
}

// SortFindings puts findings in Diff's output order: most serious first,
// then rule id, path, skill, scheme and message. It is stable.
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

// skillPointer points at a skill by its served index, or at one of its fields.
func skillPointer(s Skill, field ...string) string {
	return pointer(append([]string{"skills", strconv.Itoa(s.Index)}, field...)...)
}

// interfacePointer points at the i-th supported interface, or at one of its
// fields.
func interfacePointer(i int, field ...string) string {
	return pointer(append([]string{"supportedInterfaces", strconv.Itoa(i)}, field...)...)
}

// schemeWrapper is the v1.0 oneof member that holds a scheme of the given
// normalised type.
func schemeWrapper(typ string) string {
	for _, w := range schemeWrappers {
		if w.typ == typ {
			return w.key
		}
	}
	return typ
}

// schemePointer points at a security scheme, or at a field inside its v1.0
// wrapper.
func schemePointer(name string, s SecurityScheme, field ...string) string {
	if len(field) == 0 {
		return pointer("securitySchemes", name)
	}
	return pointer(append([]string{"securitySchemes", name, schemeWrapper(s.Type)}, field...)...)
}

// skillsByID returns the skills of c in id order with duplicated ids dropped
// (the first wins, as in Card.Skill).
func skillsByID(c *Card) []Skill {
	byID := func(a, b Skill) int { return cmp.Compare(a.ID, b.ID) }
	out := c.Skills
	if !slices.IsSortedFunc(out, byID) {
		out = slices.Clone(out)
		slices.SortStableFunc(out, byID)
	}
	if !hasDuplicateIDs(out) {
		return out
	}
	return slices.CompactFunc(slices.Clone(out), func(a, b Skill) bool { return a.ID == b.ID })
}

func hasDuplicateIDs(sorted []Skill) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return true
		}
	}
	return false
}

// skillByID finds a skill without relying on the card's index, so that cards
// built without Parse still compare correctly.
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

// retainedSkills calls fn for every skill id present in both cards, in id
// order.
func retainedSkills(pinned, live *Card, fn func(p, l Skill)) {
	for _, p := range skillsByID(pinned) {
		if l, ok := skillByID(live, p.ID); ok {
			fn(p, l)
		}
	}
}

// retained calls fn for every key of pinned that live has too, in key order,
// with the value in each.
func retained[V any](pinned, live map[string]V, fn func(key string, p, l V)) {
	for _, k := range sortedKeys(pinned) {
		if l, ok := live[k]; ok {
			fn(k, pinned[k], l)
		}
	}
}

// onlyIn returns the keys of m that other lacks, in order.
func onlyIn[V any](m, other map[string]V) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		if _, ok := other[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// retainedFlows calls fn for every OAuth 2.0 flow that two oauth2 schemes
// (the pinned and the live declaration of one name) both declare, in name
// order; for schemes of another type it does nothing.
func retainedFlows(p, l SecurityScheme, fn func(flow string, pf, lf OAuthFlow)) {
	if p.Type == "oauth2" && l.Type == "oauth2" {
		retained(p.Flows, l.Flows, fn)
	}
}

// extensionsByURI indexes a card's extensions by URI (the first of a
// duplicated URI wins) together with their served index.
func extensionsByURI(c *Card) map[string]indexedExtension {
	m := make(map[string]indexedExtension, len(c.Capabilities.Extensions))
	for i, e := range c.Capabilities.Extensions {
		// i indexes the parsed list; servedPaths maps it to the served entry.
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

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// plainStrings returns a copy of s that is never nil, for Before/After values
// (a declared-empty and an absent list both marshal as []).
func plainStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
