package detector

import (
	"fmt"
	"strconv"
	"strings"
)

// Evaluate diffs the pinned card against the live one, adds the task-level
// findings the caller observed (unmodeled-skill, artifact-type-undeclared,
// blind-retry), and judges them for one task. It returns every finding (in
// Diff order) and the task's verdict; see Judge.
//
// Each returned finding has Touches set: whether it affects this task.
func Evaluate(pinned, live *Card, req Requirements, posture Posture, taskFindings ...Finding) ([]Finding, Verdict) {
	all := append(Diff(pinned, live), taskFindings...)
	sortFindings(all)
	for i := range all {
		all[i].Touches = Touches(all[i], pinned, live, req)
	}
	return all, Judge(all, pinned, live, req, posture)
}

// EvaluateUnknown is Evaluate for a task pinned by a digest whose card body
// carddrift never saw (a client-digest pin): it can tell that the pinned card
// is not the live one, not what changed. When the digests differ the findings
// hold one pinned-card-unknown finding (breaking, touching the task), so
// fail-closed aborts and degrade re-plans an idempotent task whose skill the
// live card still offers; the task-level findings the caller observed are
// added and judged against the live card.
func EvaluateUnknown(pinnedDigest, liveDigest string, live *Card, req Requirements, posture Posture, taskFindings ...Finding) ([]Finding, Verdict) {
	all := append([]Finding(nil), taskFindings...)
	if pinnedDigest != liveDigest {
		all = append(all, Finding{
			Rule: RulePinnedCardUnknown, Severity: Breaking, Before: pinnedDigest, After: liveDigest,
			Message: render(RulePinnedCardUnknown, "before", pinnedDigest, "after", liveDigest),
		})
	}
	sortFindings(all)
	for i := range all {
		all[i].Touches = Touches(all[i], live, live, req)
	}
	return all, Judge(all, live, live, req, posture)
}

// Judge decides what a task should do about findings between its pinned card
// and the live card, following the postures of the pinning write-up:
//
//   - a finding matters only if it touches what the task uses (its skill, the
//     modes, streaming, push and security it planned with) and is at least a
//     warning; those are Verdict.Impacting;
//   - no impacting breaking finding: Continue;
//   - FailClosed: any impacting breaking finding aborts;
//   - Degrade: re-plan when the task is idempotent and its required skill is
//     still offered by the live card, otherwise abort.
//
// An empty posture is FailClosed. Judge is pure and deterministic.
func Judge(findings []Finding, pinned, live *Card, req Requirements, posture Posture) Verdict {
	if posture == "" {
		posture = FailClosed
	}
	v := Verdict{Posture: posture}
	var breaking []Finding
	for _, f := range findings {
		if f.Severity < Warning || !Touches(f, pinned, live, req) {
			continue
		}
		v.Impacting = append(v.Impacting, f)
		if f.Severity == Breaking {
			breaking = append(breaking, f)
		}
	}
	if len(breaking) == 0 {
		v.Action = Continue
		switch {
		case len(v.Impacting) > 0:
			v.Reason = "only warning-level drift touches this task: " + summarize(v.Impacting)
		case len(findings) > 0:
			v.Reason = fmt.Sprintf("%d finding(s), none touches this task", len(findings))
		default:
			v.Reason = "no drift"
		}
		return v
	}
	if posture == FailClosed {
		v.Action = Abort
		v.Reason = "fail-closed: breaking drift touches this task: " + summarize(breaking) + "; re-negotiate against the live card"
		return v
	}
	_, offered := live.Skill(req.SkillID)
	switch {
	case !req.Idempotent:
		v.Action = Abort
		v.Reason = "degrade: cannot re-plan a task that is not idempotent: " + summarize(breaking)
	case req.SkillID != "" && !offered:
		v.Action = Abort
		v.Reason = fmt.Sprintf("degrade: cannot re-plan: skill %q is no longer offered: %s", req.SkillID, summarize(breaking))
	default:
		v.Action = Replan
		if req.SkillID != "" {
			v.Reason = fmt.Sprintf("degrade: task is idempotent and skill %q is still offered; re-plan against the live card: %s", req.SkillID, summarize(breaking))
		} else {
			v.Reason = "degrade: task is idempotent; re-plan against the live card: " + summarize(breaking)
		}
	}
	return v
}

func summarize(fs []Finding) string {
	seen := map[string]bool{}
	var parts []string
	for _, f := range fs {
		if seen[f.Rule] {
			continue
		}
		seen[f.Rule] = true
		parts = append(parts, f.Rule)
	}
	return strings.Join(parts, ", ")
}

// Touches reports whether a finding concerns what the task uses. Descriptive
// findings never touch a task; skill findings touch only the task's skill;
// capability findings touch only tasks that need the capability; security
// findings touch tasks that authenticate with (or are required to use) the
// scheme; card-wide structural findings (protocol version, interfaces,
// extensions, card-level security requirements) touch every task.
func Touches(f Finding, pinned, live *Card, req Requirements) bool {
	switch f.Rule {
	case RuleUnmodeledSkill, RuleArtifactTypeUndeclared, RuleBlindRetry, RulePinnedCardUnknown:
		return true
	case RuleCardNonconformant:
		return false
	case RuleDescriptiveTextChanged, RuleCardVersionChanged, RuleSkillAdded,
		RuleStreamingEnabled, RulePushNotificationsEnabled, RuleSecuritySchemeAdded,
		RuleContentChangedWithoutVersion:
		return false
	case RuleStreamingDisabled:
		return req.Streaming
	case RulePushNotificationsDisabled:
		return req.PushNotifications
	case RuleSkillRemoved:
		return f.Skill != "" && f.Skill == req.SkillID
	case RuleSkillInputModesChanged:
		return f.Skill == req.SkillID && modesTouch(req.SkillID, req.InputModes, pinned, live, (*Card).InputModes, f)
	case RuleSkillOutputModesChanged:
		return f.Skill == req.SkillID && modesTouch(req.SkillID, req.OutputModes, pinned, live, (*Card).OutputModes, f)
	case RuleDefaultInputModesChanged:
		return usesDefaults(pinned, req.SkillID, func(s Skill) bool { return s.InputModes == nil }) &&
			modesTouch(req.SkillID, req.InputModes, pinned, live, (*Card).InputModes, f)
	case RuleDefaultOutputModesChanged:
		return usesDefaults(pinned, req.SkillID, func(s Skill) bool { return s.OutputModes == nil }) &&
			modesTouch(req.SkillID, req.OutputModes, pinned, live, (*Card).OutputModes, f)
	case RuleSecuritySchemeRemoved, RuleSecuritySchemeChanged, RuleOAuthScopeRemoved:
		return usesScheme(f.Scheme, pinned, req)
	case RuleSecurityRequirementsChanged:
		if f.Skill != "" {
			return f.Skill == req.SkillID
		}
		if s, ok := pinned.Skill(req.SkillID); ok && len(s.SecurityRequirements) > 0 {
			// The skill's own requirements override the card's.
			if ls, ok := live.Skill(req.SkillID); ok && len(ls.SecurityRequirements) > 0 {
				return false
			}
		}
		return true
	}
	if f.Skill != "" {
		return f.Skill == req.SkillID
	}
	return true
}

// usesDefaults reports whether the task's skill (in the pinned card) takes its
// modes from the card defaults; a task with no or an unknown skill does.
func usesDefaults(pinned *Card, skillID string, undeclared func(Skill) bool) bool {
	s, ok := pinned.Skill(skillID)
	return !ok || undeclared(s)
}

// modesTouch decides whether a mode change matters to the task. Without
// declared task modes, the finding's own severity decides (narrowing is
// breaking). With them, it matters when a mode the task needs was covered by
// the pinned card and no longer is by the live card.
func modesTouch(skillID string, need []string, pinned, live *Card, modes func(*Card, Skill) []string, f Finding) bool {
	if len(need) == 0 {
		return true
	}
	effective := func(c *Card) []string {
		if s, ok := c.Skill(skillID); ok {
			return modes(c, s)
		}
		return modes(c, Skill{})
	}
	before, after := effective(pinned), effective(live)
	for _, m := range need {
		if (len(before) == 0 || Covers(before, m)) && len(after) > 0 && !Covers(after, m) {
			return true
		}
	}
	return false
}

// usesScheme reports whether the task authenticates with scheme: named in the
// task's requirements, or else required by the pinned card for its skill.
func usesScheme(scheme string, pinned *Card, req Requirements) bool {
	if scheme == "" {
		return true
	}
	if len(req.Security) > 0 {
		for _, s := range req.Security {
			if strings.EqualFold(s, scheme) {
				return true
			}
		}
		return false
	}
	reqs := pinned.SecurityRequirements
	if s, ok := pinned.Skill(req.SkillID); ok && len(s.SecurityRequirements) > 0 {
		reqs = s.SecurityRequirements
	}
	for _, r := range reqs {
		if _, ok := r[scheme]; ok {
			return true
		}
	}
	return false
}

// CheckInputRequest returns an unmodeled-skill finding when an input request
// refers to a skill the pinned card never declared.
func CheckInputRequest(pinned *Card, skillID string) (Finding, bool) {
	if skillID == "" {
		return Finding{}, false
	}
	if _, ok := pinned.Skill(skillID); ok {
		return Finding{}, false
	}
	return Finding{
		Rule: RuleUnmodeledSkill, Severity: Breaking, Path: "/skills", Before: nil, After: skillID,
		Message: render(RuleUnmodeledSkill, "skill", quote(skillID)), Skill: skillID,
	}, true
}

// CheckArtifact returns an artifact-type-undeclared finding for each media type
// of an artifact that the pinned skill's effective output modes do not cover
// (the card's default output modes when the task names no declared skill).
func CheckArtifact(pinned *Card, skillID, artifactID string, mediaTypes []string) []Finding {
	var modes []string
	path := "/defaultOutputModes"
	if s, ok := pinned.Skill(skillID); ok {
		modes = pinned.OutputModes(s)
		if s.OutputModes != nil {
			path = fmt.Sprintf("/skills/%d/outputModes", s.Index)
		}
	} else {
		modes = pinned.DefaultOutputModes
	}
	if len(modes) == 0 {
		return nil // nothing declared: nothing to hold the artifact against
	}
	var out []Finding
	for _, mt := range mediaTypes {
		if !Covers(modes, mt) {
			out = append(out, Finding{
				Rule: RuleArtifactTypeUndeclared, Severity: Breaking, Path: path, Before: plainStrings(modes), After: mt,
				Message: render(RuleArtifactTypeUndeclared, "artifact", quote(artifactID), "mediaType", quote(mt),
					"modes", quoteList(modes), "skill", quote(skillID)),
				Skill: skillID,
			})
		}
	}
	return out
}

// CheckRetry returns a blind-retry finding when a retry (attempt > 1) of
// method follows a schema-class error (recorded in the pin) on a pin that no
// longer matches the live card: the client is retrying with a stale card
// instead of re-reading it and re-planning.
func CheckRetry(pin Pin, method string, attempt int, liveDigest string) (Finding, bool) {
	if attempt <= 1 || pin.SchemaErrorAt.IsZero() || liveDigest == "" || pin.Digest == liveDigest {
		return Finding{}, false
	}
	return Finding{
		Rule: RuleBlindRetry, Severity: Breaking, Path: "", Before: pin.Digest, After: liveDigest,
		Message: render(RuleBlindRetry, "attempt", strconv.Itoa(attempt), "method", quote(method),
			"code", strconv.Itoa(pin.SchemaErrorCode)),
		Skill: pin.Requirements.SkillID,
	}, true
}
