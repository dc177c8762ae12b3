package detector

import (
	"fmt"
	"slices"
	"strings"
)

// UnmetKind names a requirement of a task that a card does not satisfy; the
// values are stable.
type UnmetKind string

// Kinds of Unmet.
const (
	UnmetSkill                UnmetKind = "skill-not-offered"
	UnmetStreaming            UnmetKind = "streaming-not-supported"
	UnmetPushNotifications    UnmetKind = "push-notifications-not-supported"
	UnmetInputMode            UnmetKind = "input-mode-not-accepted"  // not covered by the skill's effective input modes
	UnmetOutputMode           UnmetKind = "output-mode-not-produced" // not covered by its effective output modes
	UnmetSecurityScheme       UnmetKind = "security-scheme-missing"  // a scheme the client uses is not declared
	UnmetSecurityRequirements UnmetKind = "security-requirements-unmet"
	UnmetScope                UnmetKind = "oauth-scope-not-offered" // by no flow of that scheme
	UnmetExtension            UnmetKind = "extension-not-declared"  // the client activates it
	UnmetExtensionRequired    UnmetKind = "extension-required"      // and the client (listing its extensions) does not activate it
	UnmetExtendedCard         UnmetKind = "extended-card-not-offered"
)

// Unmet is one requirement of a task that a card does not satisfy.
type Unmet struct {
	Kind UnmetKind `json:"kind"`
	// Value is what is missing: the skill id, media type or scheme name
	// (for UnmetSecurityRequirements, the client's schemes, comma-separated).
	Value   string `json:"value"`
	Message string `json:"message"`
}

// Unsatisfied returns what of req the card does not satisfy, in a fixed
// order (a planner's pre-dispatch check). A card that declares no modes
// constrains none; security is checked only when req.Security names the
// client's schemes (case-insensitively).
func Unsatisfied(card *Card, req Requirements) []Unmet {
	if card == nil {
		return nil
	}
	var out []Unmet
	skill, offered := card.Skill(req.SkillID)
	if req.SkillID != "" && !offered {
		out = append(out, Unmet{UnmetSkill, req.SkillID, fmt.Sprintf("skill %q is not offered", req.SkillID)})
	}
	if req.Streaming && !card.Capabilities.Streaming {
		out = append(out, Unmet{UnmetStreaming, "streaming", "the task streams and the card does not declare streaming"})
	}
	if req.PushNotifications && !card.Capabilities.PushNotifications {
		out = append(out, Unmet{UnmetPushNotifications, "pushNotifications", "the task uses push notifications and the card does not declare them"})
	}
	if req.ExtendedCard && !card.Capabilities.ExtendedAgentCard {
		out = append(out, Unmet{UnmetExtendedCard, "extendedAgentCard", "the task uses the extended card and the card does not offer one"})
	}
	declared := extensionsByURI(card)
	for _, uri := range req.Extensions {
		if _, ok := declared[uri]; !ok {
			out = append(out, Unmet{UnmetExtension, uri, fmt.Sprintf("extension %q is not declared", uri)})
		}
	}
	if req.Extensions != nil {
		for _, e := range card.Capabilities.Extensions {
			if e.Required && !slices.Contains(req.Extensions, e.URI) {
				out = append(out, Unmet{UnmetExtensionRequired, e.URI, fmt.Sprintf("extension %q is required and the client does not activate it", e.URI)})
			}
		}
	}
	in, outModes := card.InputModes(skill), card.OutputModes(skill)
	for _, m := range req.InputModes {
		if len(in) > 0 && !Covers(in, m) {
			out = append(out, Unmet{UnmetInputMode, m, fmt.Sprintf("input mode %q is not accepted (accepted: %s)", m, strings.Join(in, ", "))})
		}
	}
	for _, m := range req.OutputModes {
		if len(outModes) > 0 && !Covers(outModes, m) {
			out = append(out, Unmet{UnmetOutputMode, m, fmt.Sprintf("output mode %q is not produced (produced: %s)", m, strings.Join(outModes, ", "))})
		}
	}
	for _, scheme := range sortedKeys(req.Scopes) {
		sch, ok := schemeNamed(card, scheme)
		if !ok || sch.Type != "oauth2" {
			continue // an undeclared scheme is reported below when the client names it
		}
		for _, scope := range req.Scopes[scheme] {
			offered := false
			for _, f := range sch.Flows {
				if _, ok := f.Scopes[scope]; ok {
					offered = true
				}
			}
			if !offered {
				out = append(out, Unmet{UnmetScope, scheme + ":" + scope, fmt.Sprintf("scope %q is offered by no flow of scheme %q", scope, scheme)})
			}
		}
	}
	if len(req.Security) == 0 {
		return out
	}
	for _, s := range req.Security {
		if _, ok := schemeNamed(card, s); !ok {
			out = append(out, Unmet{UnmetSecurityScheme, s, fmt.Sprintf("security scheme %q is not declared", s)})
		}
	}
	reqs := card.SecurityRequirements
	if offered && len(skill.SecurityRequirements) > 0 {
		reqs = skill.SecurityRequirements
	}
	if len(reqs) > 0 && !anyRequirementMet(reqs, req.Security) {
		out = append(out, Unmet{UnmetSecurityRequirements, strings.Join(req.Security, ","),
			fmt.Sprintf("no security requirement is met by the client's schemes (%s); required: %s",
				strings.Join(req.Security, ", "), requirementsString(reqs))})
	}
	return out
}

func schemeNamed(card *Card, name string) (SecurityScheme, bool) {
	if s, ok := card.SecuritySchemes[name]; ok {
		return s, true
	}
	for k, s := range card.SecuritySchemes {
		if strings.EqualFold(k, name) {
			return s, true
		}
	}
	return SecurityScheme{}, false
}

// anyRequirementMet reports whether one requirement names only schemes the
// client uses ({} always is).
func anyRequirementMet(reqs []SecurityRequirement, have []string) bool {
	return slices.ContainsFunc(reqs, func(r SecurityRequirement) bool {
		for name := range r {
			if !slices.ContainsFunc(have, func(v string) bool { return strings.EqualFold(v, name) }) {
				return false
			}
		}
		return true
	})
}

func requirementsString(reqs []SecurityRequirement) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		parts = append(parts, "{"+strings.Join(sortedKeys(r), "+")+"}")
	}
	return strings.Join(parts, " or ")
}
