package detector

import (
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// servedPaths rewrites the paths of findings, built in the card's v1.0 form,
// into pointers that resolve in the card as served (a v0.3 card's
// requirements are at /security): into the live card, or the pinned one for
// a removal; else the deepest prefix that resolves.
func servedPaths(fs []Finding, pinned, live *Card) {
	var trees [2]*jcs.Value
	tree := func(i int, c *Card) *jcs.Value {
		if trees[i] == nil {
			v, err := jcs.Parse(c.Raw, jcs.Limits{})
			if err != nil || len(c.Raw) == 0 {
				v = jcs.Value{Kind: jcs.Null}
			}
			trees[i] = &v
		}
		return trees[i]
	}
	for i := range fs {
		f := &fs[i]
		if f.Path == "" || f.Rule == RuleCardNonconformant {
			continue
		}
		order := [2]int{1, 0} // live first
		if f.After == nil && f.Before != nil {
			order = [2]int{0, 1}
		}
		cards := [2]*Card{pinned, live}
		var first string
		resolved := false
		for n, k := range order {
			c := cards[k]
			p := c.servedPath(f.Path)
			if n == 0 {
				first = p
			}
			if c.Raw == nil { // built by hand: nothing to resolve against
				resolved = n == 0
				break
			}
			if resolves(tree(k, c), p) {
				f.Path, resolved = p, true
				break
			}
		}
		if !resolved {
			k := order[0]
			f.Path = deepestPrefix(tree(k, cards[k]), first)
		} else if cards[order[0]].Raw == nil {
			f.Path = first
		}
	}
}

// servedPath maps a pointer into the card's v1.0 form onto the card as served.
func (c *Card) servedPath(v1 string) string {
	tok := splitPointer(v1)
	if len(tok) == 0 {
		return v1
	}
	switch tok[0] {
	case "supportedInterfaces":
		i, err := strconv.Atoi(at(tok, 1))
		if err != nil || i < 0 || i >= len(c.Interfaces) || c.Interfaces[i].src.ptr == "" {
			return v1
		}
		src := c.Interfaces[i].src
		if len(tok) == 2 {
			return src.ptr
		}
		field := map[string]string{"url": src.url, "protocolBinding": src.binding, "protocolVersion": src.version, "tenant": src.tenant}[tok[2]]
		if field == "" {
			return src.ptr + pointer(tok[2:]...)
		}
		return field + pointer(tok[3:]...)
	case "securityRequirements":
		if c.src.requirements != "" {
			return c.src.requirements + pointer(tok[1:]...)
		}
	case "skills":
		if at(tok, 2) != "securityRequirements" {
			return v1
		}
		i, err := strconv.Atoi(tok[1])
		if err != nil {
			return v1
		}
		for _, s := range c.Skills {
			if s.Index == i && s.requirementsKey != "" {
				return pointer("skills", tok[1], s.requirementsKey) + pointer(tok[3:]...)
			}
		}
	case "securitySchemes":
		s, ok := c.SecuritySchemes[at(tok, 1)]
		if !ok || s.src == "" {
			return v1
		}
		if len(tok) == 2 {
			if strings.HasPrefix(s.src, "/securitySchemes/") {
				return v1
			}
			return s.src // a v0.1 authentication scheme
		}
		rest := tok[2:]
		if rest[0] == schemeWrapper(s.Type) {
			rest = rest[1:]
		}
		if at(rest, 0) == "flows" && len(rest) >= 2 {
			if f, ok := s.Flows[rest[1]]; ok && f.src != "" {
				return f.src + pointer(rest[2:]...)
			}
		}
		return s.src + pointer(rest...)
	case "capabilities":
		switch at(tok, 1) {
		case "extendedAgentCard":
			if c.src.extendedCard != "" {
				return c.src.extendedCard
			}
		case "extensions":
			i, err := strconv.Atoi(at(tok, 2))
			if err == nil && i >= 0 && i < len(c.Capabilities.Extensions) && c.Capabilities.Extensions[i].src != "" {
				return c.Capabilities.Extensions[i].src + pointer(tok[3:]...)
			}
		}
	}
	return v1
}

func at(tok []string, i int) string {
	if i < len(tok) {
		return tok[i]
	}
	return ""
}

func splitPointer(p string) []string {
	if p == "" || p[0] != '/' {
		return nil
	}
	tok := strings.Split(p[1:], "/")
	for i, t := range tok {
		if strings.Contains(t, "~") {
			tok[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		}
	}
	return tok
}

func resolves(v *jcs.Value, p string) bool {
	for _, t := range splitPointer(p) {
		switch v.Kind {
		case jcs.Object:
			next, ok := v.Get(t)
			if !ok {
				return false
			}
			v = next
		case jcs.Array:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(v.Elems) || strconv.Itoa(i) != t {
				return false
			}
			v = &v.Elems[i]
		default:
			return false
		}
	}
	return true
}

func deepestPrefix(v *jcs.Value, p string) string {
	tok := splitPointer(p)
	for n := len(tok); n > 0; n-- {
		q := pointer(tok[:n]...)
		if resolves(v, q) {
			return q
		}
	}
	return ""
}
