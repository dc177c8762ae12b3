package detector

import (
	"slices"
	"strings"
)

// checkInterfaces reports changes of the interfaces, identified by (url,
// binding): removed, moved (removed and added of one binding, paired in card
// order) or a tenant changed is breaking; another retained interface
// preferred is a warning; added is info.
func checkInterfaces(pinned, live *Card) []Finding {
	p, l := groupInterfaces(pinned.Interfaces), groupInterfaces(live.Interfaces)
	var out []Finding
	change := func(variant string, sev Severity, path string, before, after any, kv ...string) {
		out = append(out, newFinding(RuleInterfaceChanged, "/"+variant, sev, path, before, after, kv...))
	}
	var removed, added []interfaceGroup
	for _, g := range p.order {
		if lg, ok := l.byKey[g.key()]; ok {
			if g.tenant != lg.tenant {
				change("tenant", Breaking, interfacePointer(lg.index, "tenant"), g.tenant, lg.tenant,
					"binding", lg.binding, "url", quote(lg.url), "before", quote(g.tenant), "after", quote(lg.tenant))
			}
			continue
		}
		removed = append(removed, g)
	}
	for _, g := range l.order {
		if _, ok := p.byKey[g.key()]; !ok {
			added = append(added, g)
		}
	}
	for _, r := range removed {
		i := slices.IndexFunc(added, func(a interfaceGroup) bool { return strings.EqualFold(a.binding, r.binding) })
		if i < 0 {
			change("removed", Breaking, interfacePointer(r.index), r.value(), nil, "binding", r.binding, "url", quote(r.url))
			continue
		}
		a := added[i]
		added = slices.Delete(added, i, i+1)
		change("moved", Breaking, interfacePointer(a.index), r.value(), a.value(),
			"binding", a.binding, "before", quote(r.url), "after", quote(a.url))
	}
	for _, a := range added {
		change("added", Info, interfacePointer(a.index), nil, a.value(), "binding", a.binding, "url", quote(a.url))
	}
	if len(p.order) > 0 && len(l.order) > 0 {
		pp, lp := p.order[0], l.order[0]
		if _, retained := l.byKey[pp.key()]; retained && pp.key() != lp.key() {
			change("preferred", Warning, interfacePointer(0), pp.value(), lp.value(),
				"before", pp.binding+" "+quote(pp.url), "after", lp.binding+" "+quote(lp.url))
		}
	}
	return out
}

// interfaceGroup is every declared interface of one (url, binding): cards
// may list an endpoint once per protocol version.
type interfaceGroup struct {
	url, binding, tenant string
	norm                 string   // url as normalizeURL gives it
	index                int      // served index of the first one
	versions             []string // distinct protocol versions, in card order
}

type interfaceKey struct{ url, binding string }

func (g interfaceGroup) key() interfaceKey { return interfaceKey{g.norm, g.binding} }

func (g interfaceGroup) value() map[string]string {
	m := map[string]string{"url": g.url, "protocolBinding": g.binding}
	if len(g.versions) > 0 {
		m["protocolVersion"] = strings.Join(g.versions, ", ")
	}
	if g.tenant != "" {
		m["tenant"] = g.tenant
	}
	return m
}

type interfaceGroups struct {
	order []interfaceGroup
	byKey map[interfaceKey]*interfaceGroup
}

func groupInterfaces(ifs []Interface) interfaceGroups {
	gs := interfaceGroups{
		order: make([]interfaceGroup, 0, len(ifs)),
		byKey: make(map[interfaceKey]*interfaceGroup, len(ifs)),
	}
	for i, in := range ifs {
		g := interfaceGroup{url: in.URL, norm: normalizeURL(in.URL), binding: strings.ToUpper(in.ProtocolBinding), tenant: in.Tenant, index: i}
		if j := slices.IndexFunc(gs.order, func(o interfaceGroup) bool { return o.key() == g.key() }); j >= 0 {
			if !slices.Contains(gs.order[j].versions, in.ProtocolVersion) {
				gs.order[j].versions = append(gs.order[j].versions, in.ProtocolVersion)
			}
			continue
		}
		g.versions = []string{in.ProtocolVersion}
		gs.order = append(gs.order, g)
	}
	for i := range gs.order {
		gs.byKey[gs.order[i].key()] = &gs.order[i]
	}
	return gs
}

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
