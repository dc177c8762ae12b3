package detector

import (
	"slices"
	"strings"
)

// checkProtocolVersion reports a change of the protocol versions of each
// retained interface, else of the card as a whole (every interface moved).
// "0.3.0" is "0.3"; a change is breaking when a pinned major.minor line is no
// longer offered, else info.
func checkProtocolVersion(pinned, live *Card) []Finding {
	p, l := groupInterfaces(pinned.Interfaces), groupInterfaces(live.Interfaces)
	var out []Finding
	for _, g := range p.order {
		lg, ok := l.byKey[g.key()]
		if !ok {
			continue
		}
		sev, changed := versionChange(g.versions, lg.versions)
		if !changed {
			continue
		}
		out = append(out, newFinding(RuleProtocolVersionChanged, "/interface", sev, interfacePointer(lg.index, "protocolVersion"),
			plainStrings(g.versions), plainStrings(lg.versions), "binding", lg.binding, "url", quote(lg.url),
			"before", versionList(g.versions), "after", versionList(lg.versions)))
	}
	if len(out) > 0 {
		return out
	}
	pv, lv := allVersions(p), allVersions(l)
	if sev, changed := versionChange(pv, lv); changed {
		out = append(out, newFinding(RuleProtocolVersionChanged, "/card", sev, pointer("supportedInterfaces"),
			plainStrings(pv), plainStrings(lv), "before", versionList(pv), "after", versionList(lv)))
	}
	return out
}

func allVersions(gs interfaceGroups) []string {
	var out []string
	for _, g := range gs.order {
		for _, v := range g.versions {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func versionChange(before, after []string) (Severity, bool) {
	nb, na := normalizeVersions(before), normalizeVersions(after)
	if slices.Equal(nb, na) {
		return 0, false
	}
	for _, v := range nb {
		if !slices.ContainsFunc(na, func(w string) bool { return versionLine(w) == versionLine(v) }) {
			return Breaking, true
		}
	}
	return Info, true
}

// normalizeVersions returns the sorted distinct versions, zero patch dropped.
func normalizeVersions(vs []string) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, normalizeVersion(v))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func normalizeVersion(v string) string {
	v = strings.TrimSpace(v)
	if strings.Count(v, ".") == 2 {
		v = strings.TrimSuffix(v, ".0")
	}
	return v
}

func versionLine(v string) string {
	if i := strings.IndexByte(v, '.'); i >= 0 {
		if j := strings.IndexByte(v[i+1:], '.'); j >= 0 {
			return v[:i+1+j]
		}
	}
	return v
}
