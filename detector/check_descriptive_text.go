package detector

import "slices"

// checkDescriptiveText reports every changed piece of descriptive text, one
// finding per field: the card's name, description, provider, documentation
// and icon URLs; the name, description, tags and examples (as sets) of each
// retained skill; the description of each retained scheme, scope and
// extension.
func checkDescriptiveText(pinned, live *Card) []Finding {
	var out []Finding
	text := func(variant, path, before, after string, kv ...string) {
		if before == after {
			return
		}
		for i := 1; i < len(kv); i += 2 {
			kv[i] = quote(kv[i]) // identifiers: skill, scheme, scope, uri
		}
		kv = append(kv, "before", quoteText(before), "after", quoteText(after))
		out = append(out, newFinding(RuleDescriptiveTextChanged, "/"+variant, Info, path, before, after, kv...))
	}
	text("name", pointer("name"), pinned.Name, live.Name)
	text("description", pointer("description"), pinned.Description, live.Description)
	text("provider-organization", pointer("provider", "organization"), pinned.Provider.Organization, live.Provider.Organization)
	text("provider-url", pointer("provider", "url"), pinned.Provider.URL, live.Provider.URL)
	text("documentation-url", pointer("documentationUrl"), pinned.DocumentationURL, live.DocumentationURL)
	text("icon-url", pointer("iconUrl"), pinned.IconURL, live.IconURL)

	retainedSkills(pinned, live, func(p, l Skill) {
		n := len(out)
		id := l.ID
		text("skill-name", skillPointer(l, "name"), p.Name, l.Name, "skill", id)
		text("skill-description", skillPointer(l, "description"), p.Description, l.Description, "skill", id)
		set := func(variant, field string, before, after []string) {
			if !sameSet(before, after) {
				out = append(out, newFinding(RuleDescriptiveTextChanged, "/"+variant, Info, skillPointer(l, field),
					plainStrings(before), plainStrings(after),
					"skill", quote(id), "before", quoteTextList(before), "after", quoteTextList(after)))
			}
		}
		set("skill-tags", "tags", p.Tags, l.Tags)
		set("skill-examples", "examples", p.Examples, l.Examples)
		for i := n; i < len(out); i++ {
			out[i].Skill = l.ID
		}
	})

	retained(pinned.SecuritySchemes, live.SecuritySchemes, func(name string, ps, ls SecurityScheme) {
		n := len(out)
		text("scheme-description", schemePointer(name, ls, "description"), ps.Description, ls.Description, "scheme", name)
		retainedFlows(ps, ls, func(fn string, pf, lf OAuthFlow) {
			retained(pf.Scopes, lf.Scopes, func(scope, pd, ld string) {
				text("scope-description", schemePointer(name, ls, "flows", fn, "scopes", scope), pd, ld, "scheme", name, "scope", scope)
			})
		})
		for i := n; i < len(out); i++ {
			out[i].Scheme = name
		}
	})

	retained(extensionsByURI(pinned), extensionsByURI(live), func(uri string, pe, le indexedExtension) {
		text("extension-description", extensionPointer(le.index, "description"), pe.Description, le.Description, "uri", uri)
	})
	return out
}

// sameSet ignores order and duplicates.
func sameSet(a, b []string) bool {
	if slices.Equal(a, b) {
		return true
	}
	sa := slices.Compact(slices.Sorted(slices.Values(a)))
	sb := slices.Compact(slices.Sorted(slices.Values(b)))
	return slices.Equal(sa, sb)
}
